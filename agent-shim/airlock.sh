#!/bin/sh
# airlock.sh: the POSIX fallback of the Airlock shim, for sandboxes without Node.
#
#   curl -fsSL "$AIRLOCK_URL/shim/airlock.sh" -o /usr/local/bin/airlock && chmod +x /usr/local/bin/airlock
#
# Needs only a POSIX sh (dash, busybox sh, bash), curl (>= 7.55), sha256sum (or openssl), and
# awk, sed, tr, wc, od, mkdir, mktemp, mv. It does `send [--json] <file>` (one file, as is: in
# one request up to 1 MiB, else in a single PUT; no gzip, no multipart, no directories) and
# `pull [--dir <dir>]`; the Node shim (/shim/airlock.mjs) does everything else.
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
  airlock --help | --version

Environment:
  AIRLOCK_URL      the relay's base URL
  AIRLOCK_TOKEN    this sandbox's session token
  AIRLOCK_INBOX_DIR
                   where pull writes without --dir (default: ./$DEFAULT_PULL_DIR)
  AIRLOCK_RETRIES  attempts per request, the first included (default 4)

This fallback sends single files as they are (no gzip, no directories, no --to) and
pulls without --wait, --json or --extract; the Node shim at
\$AIRLOCK_URL/shim/airlock.mjs does the rest (get, link, rm, ls, request, tool-schema, mcp).
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

# http <method> <url> <body file> [curl args...]: sets STATUS; fails only when no answer came. An
# empty <url> leaves it to the curl args (a -K file). Every curl request goes through here, with
# -g (--globoff): curl would otherwise read {a,b} and [1-3] in a URL or a -T file name as a
# pattern, and send `notes draft.bin` for `notes {draft}.bin`.
http() {
  _method=$1 _url=$2 _out=$3
  shift 3
  # shellcheck disable=SC2086 # RETRY is a list of options
  STATUS=$(curl -g -sS $RETRY -X "$_method" -A "airlock-shim-sh/$VERSION" -o "$_out" \
    -w '%{http_code}' "$@" ${_url:+"$_url"} 2>"$WORK/curl.err")
  _rc=$?
  if [ "$_rc" -ne 0 ] || [ -z "$STATUS" ] || [ "$STATUS" = 000 ]; then
    CURL_ERROR=$(sed -n '$p' "$WORK/curl.err" | sed 's/^curl: ([0-9]*) //')
    [ -n "$CURL_ERROR" ] || CURL_ERROR="curl exited with $_rc"
    return 1
  fi
  return 0
}

# relay <method> <path> <what> [curl args...]: a relay request; sets STATUS, BODY and FLAT.
relay() {
  _rmethod=$1 _path=$2 _what=$3
  shift 3
  BODY=$WORK/body FLAT=$WORK/flat
  if ! http "$_rmethod" "$RELAY$_path" "$BODY" -H @"$WORK/auth" "$@"; then
    die "$_what failed: relay unreachable at $RELAY ($CURL_ERROR) after $attempts attempt(s)"
  fi
  json_flatten <"$BODY" >"$FLAT" 2>/dev/null || : >"$FLAT"
}

# download <relay url> <out file>: GETs a file's bytes; sets STATUS, and FROM to who answered
# (relay or store). An s3 relay answers 307 to a short-lived presigned URL of the store: that is
# fetched without the token, which goes to the relay only (a store also refuses a presigned URL
# that carries one). Fails only when no answer came.
download() {
  FROM=relay
  http GET "$1" "$2" -H @"$WORK/auth" -D "$WORK/head" || return 1
  case $STATUS in 301 | 302 | 303 | 307 | 308) ;; *) return 0 ;; esac
  _location=$(tr -d '\r' <"$WORK/head" | sed -n 's/^[Ll][Oo][Cc][Aa][Tt][Ii][Oo][Nn]:[[:space:]]*//p' | sed -n '$p')
  case $_location in
    http://?* | https://?*) ;;
    *) return 0 ;; # Not a store URL: the redirect is the answer (a refusal).
  esac
  FROM=store
  # The URL goes to curl through a file, as the token does: for its few seconds it is a credential.
  printf 'url = "%s"\n' "$(printf '%s' "$_location" | sed 's/[\\"]/\\&/g')" >"$WORK/store-url" ||
    die "cannot write to $WORK"
  http GET "" "$2" -K "$WORK/store-url"
}

# refusal <what> <body file>: the one-line reason of a refused request.
refusal() {
  json_flatten <"$2" >"$WORK/err" 2>/dev/null || : >"$WORK/err"
  _code=$(json_get "$WORK/err" error.code)
  _msg=$(json_get "$WORK/err" error.message)
  if [ -z "$_code" ]; then # S3 answers XML: <Code>..</Code><Message>..</Message>
    _code=$(tr -d '\r\n' <"$2" | sed -n 's/.*<Code>\([^<]*\)<\/Code>.*/\1/p')
    _msg=$(tr -d '\r\n' <"$2" | sed -n 's/.*<Message>\([^<]*\)<\/Message>.*/\1/p')
  fi
  if [ -n "$_code" ] && [ -n "$_msg" ]; then
    printf '%s: %s: %s (HTTP %s)' "$1" "$_code" "$_msg" "$STATUS"
  elif [ -n "$_code" ]; then
    printf '%s: %s (HTTP %s)' "$1" "$_code" "$STATUS"
  else
    printf '%s: HTTP %s' "$1" "$STATUS"
  fi
}

# An id the relay handed out, checked before it goes into a URL path.
check_id() {
  case $1 in
    '' | *[!A-Za-z0-9_.~-]*) die "relay answered an unexpected $2: $1" ;;
  esac
}

# url_encode <text>: every byte as %XX, which any query value may be.
url_encode() {
  printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n' | sed 's/../%&/g'
}

# A random Idempotency-Key (32 hex digits), or nothing where /dev/urandom cannot be read.
idempotency_key() {
  od -An -N16 -tx1 /dev/urandom 2>/dev/null | tr -d ' \n'
}

# ---------------------------------------------------------------------------------------------
# Files

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum <"$1" | awk '{ print $1 }'
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 <"$1" | sed 's/^.*= *//'
  else
    die "sha256sum or openssl is required but neither was found in PATH"
  fi
}

size_of() { wc -c <"$1" | tr -d ' \t\r\n'; }

# A byte count for people, like the Node shim: 512 B, 42 KB, 1.5 MB (powers of 1000).
human_size() {
  awk -v b="$1" 'BEGIN {
    if (b < 1000) { printf "%d B", b; exit }
    split("KB MB GB TB", units, " "); v = b; unit = "B"
    for (i = 1; i <= 4; i++) { if (v < 1000) break; v = v / 1000; unit = units[i] }
    if (v < 10) printf "%.1f %s", v, unit; else printf "%d %s", int(v + 0.5), unit
  }'
}

# cut_bytes <text> <n>: at most the first n bytes of text, never ending in part of a UTF-8
# character (LC_ALL=C: awk counts bytes).
cut_bytes() {
  _lead2="$(printf '\300')-$(printf '\337')"
  _lead3="$(printf '\340')-$(printf '\357')"
  _lead4="$(printf '\360')-$(printf '\367')"
  _cont="$(printf '\200')-$(printf '\277')"
  printf '%s' "$1" | awk -v n="$2" '{ printf "%s", substr($0, 1, n) }' |
    sed "s/[$_lead2]\$//; s/[$_lead3][$_cont]\{0,1\}\$//; s/[$_lead4][$_cont]\{0,2\}\$//"
}

# safe_name <name>: the shared name rule, as the Node shim applies it: the last path component,
# without control characters, line separators, bidi overrides or invisible characters (zero-width,
# word joiner, BOM, tag characters), trimmed, never empty or dots only ("file" then), at most 255
# bytes keeping an extension of up to 32 bytes. Then [ and ] become ( and ), so that a name cannot
# close the context line's bracket early. The patterns are UTF-8 bytes (LC_ALL=C, set above):
# C1 = C2 80-9F; U+200B-U+200F and U+2028-U+202E = E2 80 8B-8F, A8-AE; U+2060-U+2064 and
# U+2066-U+2069 = E2 81 A0-A4, A6-A9; U+061C = D8 9C; U+FEFF = EF BB BF; the tag characters
# U+E0000-U+E007F = F3 A0 80-81 80-BF.
safe_name() {
  _c1="$(printf '\302')[$(printf '\200')-$(printf '\237')]"
  _e2a="$(printf '\342\200')[$(printf '\213')-$(printf '\217\250')-$(printf '\256')]"
  _e2b="$(printf '\342\201')[$(printf '\240')-$(printf '\244\246')-$(printf '\251')]"
  _alm="$(printf '\330\234')"
  _bom="$(printf '\357\273\277')"
  _tag="$(printf '\363\240')[$(printf '\200\201')][$(printf '\200')-$(printf '\277')]"
  _n=$(printf '%s' "$1" | tr -d '\000-\037\177' | tr '\\' '/' |
    sed "s/$_c1//g; s/$_e2a//g; s/$_e2b//g; s/$_alm//g; s/$_bom//g; s/$_tag//g")
  while :; do case $_n in */ | *' ') _n=${_n%?} ;; *) break ;; esac; done
  _n=${_n##*/}
  while :; do case $_n in ' '*) _n=${_n#?} ;; *) break ;; esac; done
  case $_n in '' | *[!.]*) ;; *) _n=file ;; esac
  [ -n "$_n" ] || _n=file
  _n=$(printf '%s' "$_n" | tr '[]' '()')
  numbered "$_n" 0
}

# numbered <name> <n>: `name` for 0, else `report (2).pdf` (an extension of up to 32 bytes is
# kept after the number); the part before the extension is cut so that it fits in 255 bytes.
numbered() {
  _stem=$1 _tail=
  [ "$2" -gt 0 ] && _tail=" ($2)"
  case $1 in
    ?*.*)
      _ext=".${1##*.}"
      if [ "${#_ext}" -le 32 ]; then
        _stem=${1%.*}
        _tail="$_tail$_ext"
      fi
      ;;
  esac
  if [ $((${#_stem} + ${#_tail})) -gt 255 ]; then
    _stem=$(cut_bytes "$_stem" $((255 - ${#_tail})))
    [ -n "$_tail" ] || while :; do case $_stem in *' ') _stem=${_stem%?} ;; *) break ;; esac; done
  fi
  printf '%s%s' "$_stem" "$_tail"
}

# ---------------------------------------------------------------------------------------------
# send

cmd_send() {
  case ${1:-} in -h | --help)
    usage_text
    exit 0
    ;;
  esac
  [ $# -ge 1 ] || usage_error "send needs a file; usage: airlock send [--json] <file>"
  json=
  for arg in "$@"; do
    case $arg in
      --to | --to=* | --caption | --caption=* | --wait | --media-tag)
        not_here "send ${arg%%=*}"
        ;;
    esac
  done
  if [ "$1" = --json ]; then
    json=1
    shift
  fi
  [ $# -ge 1 ] || usage_error "send needs a file; usage: airlock send [--json] <file>"
  [ $# -eq 1 ] || usage_error "the POSIX shim sends one file at a time; usage: airlock send [--json] <file>"
  file=$1
  case $file in -*) [ -e "$file" ] || usage_error "unknown option for send: $file" ;; esac
  [ -e "$file" ] || die "no such file: $file"
  [ -d "$file" ] && die "$file is a directory: the POSIX shim sends single files (archive it first)"
  [ -f "$file" ] || die "not a regular file: $file"
  [ -r "$file" ] || die "cannot read $file: permission denied"

  name=$file
  while :; do case $name in */) name=${name%/} ;; *) break ;; esac; done
  name=${name##*/}
  json_name=$(json_string "$name") ||
    die "cannot send $file: its name contains a quote, a backslash or a control character (rename it)"

  setup
  size=$(size_of "$file")
  case $size in '' | *[!0-9]*) die "cannot read the size of $file" ;; esac
  sha=$(sha256_of "$file")
  case $sha in
    [0-9a-f]*) [ "${#sha}" -eq 64 ] || die "cannot hash $file" ;;
    *) die "cannot hash $file" ;;
  esac

  # A path that starts with - would be an option to curl's -T and @ (standard input).
  case $file in -*) file=./$file ;; esac
  if [ "$size" -gt "$SINGLE_UPLOAD_MAX_BYTES" ] || ! send_in_one_request; then
    send_declared
  fi
  share=$(json_get "$WORK/record" "${record}url")
  [ -n "$share" ] || die "relay answered the upload of $name without a share URL"
  if [ -z "$json" ]; then
    printf '%s\n' "$share"
    return
  fi
  send_json "$WORK/record" "$record" "$size" "$sha" "$uploaded" "$deduped"
}

# send_in_one_request: `POST /v1/single-uploads`, the declaration in the query and the file as
# the body: the relay stores, verifies and registers it at once, or answers a dedup hit within
# the session's scope without reading the body. Every attempt carries the same Idempotency-Key,
# so a retry after a lost answer gets the file the first attempt made. Sets record, uploaded and
# deduped; returns 1 when the relay has no such route (an older relay).
send_in_one_request() {
  query="name=$(url_encode "$name")&size=$size&sha256=$sha&contentType=application%2Foctet-stream"
  query="$query&encoding=identity&storedSha256=$sha"
  set -- -H 'content-type: application/octet-stream' -H 'Expect:' --data-binary @"$file"
  key=$(idempotency_key)
  [ -n "$key" ] && set -- "$@" -H "idempotency-key: $key"
  relay POST "/v1/single-uploads?$query" "upload of $name" "$@"
  [ "$STATUS" = 404 ] && [ "$(json_get "$FLAT" error.code)" = not_found ] && return 1
  case $STATUS in 2??) ;; *) die "$(refusal "relay refused upload of $name" "$BODY")" ;; esac
  record=
  deduped=false
  uploaded=$size
  if [ "$(json_get "$FLAT" deduped)" = true ]; then
    deduped=true
    uploaded=0
  fi
  mv "$FLAT" "$WORK/record"
}

# send_declared: declares the file, PUTs it to the URL the relay signed and completes it, unless
# the declaration is a dedup hit. Sets record, uploaded and deduped.
send_declared() {
  declare='{"name":'"$json_name"',"size":'"$size"',"sha256":"'"$sha"'","contentType":"application/octet-stream","encoding":"identity","storedSize":'"$size"',"storedSha256":"'"$sha"'"}'
  relay POST /v1/uploads "upload of $name" -H 'content-type: application/json' --data-binary "$declare"
  case $STATUS in 2??) ;; *) die "$(refusal "relay refused upload of $name" "$BODY")" ;; esac

  answer=$(json_get "$FLAT" status)
  case $answer in
    deduped)
      record=file.
      uploaded=0
      deduped=true
      mv "$FLAT" "$WORK/record"
      ;;
    upload)
      upload_id=$(json_get "$FLAT" uploadId)
      put_url=$(json_get "$FLAT" put.url)
      check_id "$upload_id" "upload id"
      case $put_url in http://* | https://*) ;; *) die "relay answered an upload without a URL" ;; esac
      # Exactly the signed headers, and no `Expect: 100-continue` of curl's own.
      set -- -H 'Expect:'
      while IFS= read -r line; do
        case $line in
          put.headers.*)
            key=${line%%"$TAB"*}
            set -- "$@" -H "${key#put.headers.}: ${line#*"$TAB"}"
            ;;
        esac
      done <"$FLAT"
      if ! http PUT "$put_url" "$WORK/put" -T "$file" "$@"; then
        die "upload of $name failed: storage unreachable ($CURL_ERROR) after $attempts attempt(s)"
      fi
      case $STATUS in 2??) ;; *) die "$(refusal "storage refused upload of $name" "$WORK/put")" ;; esac

      relay POST "/v1/uploads/$upload_id/complete" "completing $name" -H 'content-length: 0'
      case $STATUS in 2??) ;; *) die "$(refusal "relay refused to complete $name" "$BODY")" ;; esac
      record=
      uploaded=$size
      deduped=false
      mv "$FLAT" "$WORK/record"
      ;;
    *)
      die "relay answered the upload of $name with an unexpected status: ${answer:-none}"
      ;;
  esac
}

# send_json <flat record> <path prefix> <size> <sha256> <uploaded bytes> <deduped>: the Node
# shim's `send --json` line for a file sent alone, with no deliveries.
send_json() {
  _r=$1 _p=$2
  _status=verified
  [ "$(json_get "$_r" "${_p}status")" = pending ] && _status=pending
  # Each field on its own: a refusal inside $(...) ends only that subshell.
  _id=$(record_string "$_r" "${_p}fileId") || exit 1
  _name=$(record_string "$_r" "${_p}name") || exit 1
  _url=$(record_string "$_r" "${_p}url") || exit 1
  _file_exp=$(record_string "$_r" "${_p}expiresAt") || exit 1
  _link_exp=$_file_exp # a relay that gives no link expiry: the link lasts as long as the file
  [ -n "$(json_get "$_r" "${_p}urlExpiresAt")" ] && { _link_exp=$(record_string "$_r" "${_p}urlExpiresAt") || exit 1; }
  printf '{"fileId":%s,"name":%s,"size":%s,"sha256":"%s","url":%s,"expiresAt":%s,"fileExpiresAt":%s,"status":"%s","deduped":%s,"uploadedBytes":%s,"deliveries":[]}\n' \
    "$_id" "$_name" "$3" "$4" "$_url" "$_link_exp" "$_file_exp" "$_status" "$6" "$5"
}

# record_string <flat record> <path>: a field of the relay's record as a JSON string.
record_string() {
  json_string "$(json_get "$1" "$2")" || die "relay answered a $2 this shim cannot print as JSON"
}

# ---------------------------------------------------------------------------------------------
# pull

cmd_pull() {
  dir=${AIRLOCK_INBOX_DIR:-$DEFAULT_PULL_DIR}
  while [ $# -gt 0 ]; do
    case $1 in
      --dir)
        [ $# -ge 2 ] && [ -n "$2" ] || usage_error "--dir needs a directory; usage: airlock pull [--dir <dir>]"
        dir=$2
        shift 2
        ;;
      --dir=*)
        dir=${1#--dir=}
        [ -n "$dir" ] || usage_error "--dir needs a directory; usage: airlock pull [--dir <dir>]"
        shift
        ;;
      -h | --help)
        usage_text
        exit 0
        ;;
      --json | --extract | --max-bytes | --max-bytes=* | --wait | --timeout | --timeout=* | --readonly)
        not_here "pull ${1%%=*}"
        ;;
      *) usage_error "pull takes no argument $1; usage: airlock pull [--dir <dir>]" ;;
    esac
  done
  setup

  relay GET /v1/inbox "listing the inbox"
  case $STATUS in 200) ;; *) die "$(refusal "relay refused listing the inbox" "$BODY")" ;; esac
  inbox=$WORK/inbox
  mv "$FLAT" "$inbox"
  if [ -z "$(json_get "$inbox" items.0.itemId)" ]; then
    printf 'nothing new in the inbox\n' >&2
    return 0
  fi

  case $dir in -*) dir=./$dir ;; esac
  mkdir -p "$dir" 2>/dev/null || die "cannot create directory $dir"
  dir=$(cd "$dir" && pwd) || die "cannot enter directory $dir"

  failed=0
  i=0
  while :; do
    item_id=$(json_get "$inbox" "items.$i.itemId")
    [ -n "$item_id" ] || break
    pull_item "$i" || failed=1
    i=$((i + 1))
  done
  return "$failed"
}

# pull_item <index>: writes one inbox file, prints its line, acks it; 1 when it stays in the inbox
# (one stderr line says why). Only a relay out of reach for everything ends the whole pull.
pull_item() {
  name=$(json_get "$inbox" "items.$1.name")
  sha=$(json_get "$inbox" "items.$1.sha256")
  file_id=$(json_get "$inbox" "items.$1.file.fileId")
  [ -n "$file_id" ] || file_id=$(json_get "$inbox" "items.$1.fileId")
  safe=$(safe_name "$name")
  shown_id=$(cut_bytes "$(printf '%s' "$item_id" | tr -c 'A-Za-z0-9_.~-' '?')" 100)
  which="item $shown_id ($safe)"
  case $item_id in
    '' | *[!A-Za-z0-9_.~-]*)
      warn "could not pull $which: the relay gave it an unexpected id"
      return 1
      ;;
  esac
  case $file_id in
    '' | *[!A-Za-z0-9_.~-]*)
      warn "could not pull $which, it stays in the inbox: the relay gave an unexpected file id"
      return 1
      ;;
  esac

  PARTIAL=$(mktemp "$dir/.airlock-pull.XXXXXX") || die "cannot write into $dir"
  if ! download "$RELAY/v1/files/$file_id/content" "$PARTIAL"; then
    drop_partial
    # Out of reach for this file alone, or for everything? The inbox answers that (or dies).
    relay GET /v1/inbox "listing the inbox"
    warn "could not pull $which, it stays in the inbox: download failed ($CURL_ERROR) after $attempts attempt(s)"
    return 1
  fi
  if [ "$STATUS" != 200 ]; then
    warn "could not pull $which, it stays in the inbox: $(refusal "$FROM refused the download" "$PARTIAL")"
    drop_partial
    return 1
  fi
  got=$(sha256_of "$PARTIAL")
  if [ "$got" != "$sha" ]; then
    warn "could not pull $which, it stays in the inbox: the download is corrupt (SHA-256 $got, expected $sha)"
    drop_partial
    return 1
  fi
  size=$(size_of "$PARTIAL")
  # mktemp made it 0600: give it the mode a new file gets here.
  chmod "$(printf '%o' $((0666 & ~0$(umask))))" "$PARTIAL" 2>/dev/null

  target=$dir/$safe
  k=0
  while [ -e "$target" ] || [ -L "$target" ]; do
    k=$((k + 1))
    target=$dir/$(numbered "$safe" "$k")
  done
  if ! mv "$PARTIAL" "$target" 2>/dev/null; then
    warn "could not pull $which, it stays in the inbox: cannot move it into place at $target"
    drop_partial
    return 1
  fi
  PARTIAL=

  printf '[User uploaded: %s (%s) at %s]\n' "$safe" "$(human_size "$size")" "$target"
  relay POST "/v1/inbox/$item_id/ack" "acknowledging $safe" -H 'content-length: 0'
  case $STATUS in
    2??) return 0 ;;
    *)
      warn "$(refusal "relay refused acknowledging $which" "$BODY")"
      return 1
      ;;
  esac
}

drop_partial() {
  rm -f "$PARTIAL"
  PARTIAL=
}

# ---------------------------------------------------------------------------------------------

case ${1:-} in
  send)
    shift
    cmd_send "$@"
    ;;
  pull)
    shift
    cmd_pull "$@" || exit 1
    ;;
  -h | --help | help) usage_text ;;
  -v | -V | --version) printf '%s\n' "$VERSION" ;;
  get | ls | tool-schema | link | rm | request | mcp) not_here "$1" ;;
  '') usage_error "a command is needed: send or pull (airlock --help)" ;;
  *) usage_error "unknown command: $1 (airlock --help)" ;;
esac
