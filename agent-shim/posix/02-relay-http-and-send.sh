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

# human_size <bytes>: the one unit rule (src/services/human-size.ts): 999 B, 1.5 KiB, 42 MiB,
# powers of 1024, one decimal below 10, halves rounded up.
human_size() {
  awk -v b="$1" 'BEGIN {
    if (b < 1024) { printf "%d B", int(b + 0.5); exit }
    split("KiB MiB GiB TiB PiB", units, " "); v = b + 0
    for (i = 1; i <= 5; i++) {
      v = v / 1024; t = int(v * 10 + 0.5)
      if (t < 100) { printf "%d.%d %s", int(t / 10), t % 10, units[i]; exit }
      w = int(v + 0.5)
      if (w < 1024 || i == 5) { printf "%d %s", w, units[i]; exit }
    }
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

