#!/bin/sh
# airlock.sh: the POSIX fallback of the Airlock shim, for sandboxes without Node.
#
#   curl -fsSL "$AIRLOCK_URL/shim/airlock.sh" -o /usr/local/bin/airlock && chmod +x /usr/local/bin/airlock
#
# Needs only a POSIX sh (dash, busybox sh, bash), curl (>= 7.55), sha256sum (or openssl), and
# awk, sed, tr, wc, od, mkdir, mktemp, mv. It does `send [--json] <file>` (one file, as is: in
# one request up to 1 MiB, else in a single PUT; no gzip, no multipart, no directories) and
# `pull [--dir <dir>]` and `request` (upload links); the Node shim (/shim/airlock.mjs) does
# everything else.
#
# JSON without jq: the relay's answers are read by a small JSON parser in awk (json_flatten below)
# that turns a document into one `path<TAB>value` line per string, number, boolean or null, e.g.
# `items.0.file.fileId<TAB>fil_...`. Escapes are decoded (\uXXXX into UTF-8); control characters
# in strings are dropped, so every value fits on one line. Limits: object keys are assumed not to
# contain `.` or control characters (true of every key the relay sends), an empty array or object
# produces no line, and the whole answer is held in memory (the relay's answers are small).
set -u
LC_ALL=C
export LC_ALL
CDPATH=

VERSION='0.0.0-dev' # set by scripts/build-shim.mjs when the relay serves this file
DEFAULT_PULL_DIR=uploads # in the working directory, unless --dir or AIRLOCK_INBOX_DIR says
# A file of at most this many bytes goes up in one request (the relay's SINGLE_UPLOAD_MAX_BYTES).
SINGLE_UPLOAD_MAX_BYTES=1048576
TAB=$(printf '\t')

usage_text() {
  cat <<EOF
airlock $VERSION (POSIX sh fallback): move files between this sandbox and the people it works for.

Usage:
  airlock send [--json] <file>   upload one file; prints its share URL (with --json,
                                 one JSON object: fileId, name, size, sha256, url,
                                 expiresAt (when the link stops working),
                                 fileExpiresAt (when the file goes), status,
                                 deduped, uploadedBytes, deliveries)
  airlock pull [--dir <dir>]     write the files waiting in the inbox into <dir>
                                 (default: \$AIRLOCK_INBOX_DIR when it is set, else
                                 ./$DEFAULT_PULL_DIR); one line per file:
                                 [User uploaded: <name> (<size>) at <path>]
                                 <path> is exactly where it was written; names are
                                 cleaned (last path component, no control, bidi or
                                 invisible characters, not empty or dots, at most 255 bytes)
                                 and [ ] in a name become ( ). A file that cannot be
                                 pulled is named on stderr and stays in the inbox;
                                 the others still arrive, and the exit status is 1.
                                 With nothing waiting, it says so on stderr, exit 0
  airlock request [--name <hint>] [--max-bytes <n>] [--expires <duration>] [--json]
                                 print an upload link for a person (on stderr, the
                                 curl command that sends a file to it);
                                 --max-bytes takes K, M, G, T (powers of 1024)
  airlock request --cancel <requestId>
                                 take an upload link back
  airlock --help | --version

Environment:
  AIRLOCK_URL      the relay's base URL
  AIRLOCK_TOKEN    this sandbox's session token
  AIRLOCK_INBOX_DIR
                   where pull writes without --dir (default: ./$DEFAULT_PULL_DIR)
  AIRLOCK_RETRIES  attempts per request, the first included (default 4)

This fallback sends single files as they are (no gzip, no directories, no --to) and
pulls without --wait, --json or --extract; the Node shim at
\$AIRLOCK_URL/shim/airlock.mjs does the rest (get, link, rm, ls, tool-schema, mcp).
EOF
}

# ---------------------------------------------------------------------------------------------
# Errors: one line on stderr, exit 1 (failure) or 2 (usage).

die() {
  printf 'airlock: %s\n' "$1" >&2
  exit 1
}
usage_error() {
  printf 'airlock: %s\n' "$1" >&2
  exit 2
}
warn() { printf 'airlock: %s\n' "$1" >&2; }
# not_here <what>: what the Node and Python shims do and this fallback does not (exit 2).
not_here() {
  usage_error "$1 is not supported by the POSIX shim; use the Node or Python shim (\$AIRLOCK_URL/shim/airlock.mjs or airlock.py)"
}

WORK=
PARTIAL=
cleanup() {
  [ -n "$PARTIAL" ] && rm -f "$PARTIAL"
  [ -n "$WORK" ] && rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# ---------------------------------------------------------------------------------------------
# JSON

# json_flatten < json > lines: one `path<TAB>value` line per scalar; exit 2 on malformed JSON.
json_flatten() {
  awk '
function fail() { bad = 1; exit 2 }
function ws() { while (p <= n && index(" \t\r\n", substr(s, p, 1))) p++ }
function hex(h,   i, c, d, v) {
  if (length(h) != 4) fail()
  v = 0
  for (i = 1; i <= 4; i++) {
    c = tolower(substr(h, i, 1)); d = index("0123456789abcdef", c)
    if (d == 0) fail()
    v = v * 16 + d - 1
  }
  return v
}
function utf8(cp) {
  if (cp < 128) return sprintf("%c", cp)
  if (cp < 2048) return sprintf("%c%c", 192 + int(cp / 64), 128 + cp % 64)
  if (cp < 65536) return sprintf("%c%c%c", 224 + int(cp / 4096), 128 + int(cp / 64) % 64, 128 + cp % 64)
  return sprintf("%c%c%c%c", 240 + int(cp / 262144), 128 + int(cp / 4096) % 64, 128 + int(cp / 64) % 64, 128 + cp % 64)
}
function str(   out, c, cp, lo) {
  p++
  out = ""
  while (p <= n) {
    c = substr(s, p, 1)
    if (c == "\"") { p++; return out }
    if (c == "\\") {
      c = substr(s, p + 1, 1); p += 2
      if (c == "\"" || c == "\\" || c == "/") out = out c
      else if (c == "u") {
        cp = hex(substr(s, p, 4)); p += 4
        if (cp >= 55296 && cp < 56320 && substr(s, p, 2) == "\\u") {
          lo = hex(substr(s, p + 2, 4))
          if (lo >= 56320 && lo < 57344) { cp = 65536 + (cp - 55296) * 1024 + (lo - 56320); p += 6 }
        }
        if (cp >= 55296 && cp < 57344) cp = 65533
        if (cp >= 32 && cp != 127) out = out utf8(cp)
      } else if (c == "" || index("bfnrt", c) == 0) fail()
      continue
    }
    if (!index(ctl, c)) out = out c
    p++
  }
  fail()
}
function lit(path,   start) {
  start = p
  while (p <= n && index("0123456789+-.eEtruefalsn", substr(s, p, 1))) p++
  if (p == start) fail()
  emit(path, substr(s, start, p - start))
}
function emit(path, v) { if (path != "") print path "\t" v }
function join(path, k) { return path == "" ? k : path "." k }
function val(path,   c) {
  ws(); c = substr(s, p, 1)
  if (c == "{") obj(path)
  else if (c == "[") arr(path)
  else if (c == "\"") emit(path, str())
  else lit(path)
}
function obj(path,   k, c) {
  p++; ws()
  if (substr(s, p, 1) == "}") { p++; return }
  while (1) {
    ws()
    if (substr(s, p, 1) != "\"") fail()
    k = str(); ws()
    if (substr(s, p, 1) != ":") fail()
    p++
    val(join(path, k))
    ws(); c = substr(s, p, 1); p++
    if (c == "}") return
    if (c != ",") fail()
  }
}
function arr(path,   i, c) {
  p++; ws()
  if (substr(s, p, 1) == "]") { p++; return }
  for (i = 0; ; i++) {
    val(join(path, i))
    ws(); c = substr(s, p, 1); p++
    if (c == "]") return
    if (c != ",") fail()
  }
}
BEGIN { ctl = ""; for (i = 1; i < 32; i++) ctl = ctl sprintf("%c", i); ctl = ctl sprintf("%c", 127) }
{ s = s $0 "\n" }
END {
  if (bad) exit 2
  n = length(s); p = 1
  val("")
  ws()
  if (bad || p <= n) exit 2
}'
}

# json_get <flat file> <path>: the value at path, or nothing.
json_get() {
  awk -v k="$2" 'index($0, k "\t") == 1 { print substr($0, length(k) + 2); exit }' "$1"
}

# json_string <text>: text as a JSON string, refusing what this shim will not escape.
json_string() {
  case $1 in
    *'"'* | *'\'*) return 1 ;;
  esac
  if [ "$(printf '%s' "$1" | tr -d '\000-\037\177')" != "$1" ]; then return 1; fi
  printf '"%s"' "$1"
}

# ---------------------------------------------------------------------------------------------
# HTTP

setup() {
  command -v curl >/dev/null 2>&1 || die "curl is required but was not found in PATH"
  url=${AIRLOCK_URL:-}
  url=$(printf '%s' "$url" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
  [ -n "$url" ] || usage_error "AIRLOCK_URL is not set; set it to the relay's base URL"
  case $url in
    http://?* | https://?*) ;;
    *) usage_error "AIRLOCK_URL must be an http(s) URL: $url" ;;
  esac
  while :; do case $url in */) url=${url%/} ;; *) break ;; esac; done
  RELAY=$url
  token=$(printf '%s' "${AIRLOCK_TOKEN:-}" | tr -d ' \t\r\n')
  [ -n "$token" ] || usage_error "AIRLOCK_TOKEN is not set; set it to this sandbox's session token"

  attempts=${AIRLOCK_RETRIES:-4}
  case $attempts in
    '' | *[!0-9]*) usage_error "AIRLOCK_RETRIES must be an integer from 1 to 100, not $attempts" ;;
  esac
  if [ "$attempts" -lt 1 ] || [ "$attempts" -gt 100 ]; then
    usage_error "AIRLOCK_RETRIES must be an integer from 1 to 100, not $attempts"
  fi
  # --retry-all-errors (curl >= 7.71) also retries refused connections and cut transfers; without
  # --fail, HTTP refusals other than 408/429/5xx are still final answers.
  curl_help=$(curl --help all 2>/dev/null || curl --help 2>/dev/null)
  case $curl_help in
    *--retry-all-errors*) RETRY="--retry $((attempts - 1)) --retry-all-errors" ;;
    *--retry-connrefused*) RETRY="--retry $((attempts - 1)) --retry-connrefused" ;;
    *) RETRY="--retry $((attempts - 1))" ;;
  esac

  WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock.XXXXXX") || die "cannot create a temporary directory"
  # The token goes to curl through a file, never on a command line other processes can read.
  printf 'authorization: Bearer %s\n' "$token" >"$WORK/auth" || die "cannot write to $WORK"
}

