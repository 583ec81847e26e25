# ---------------------------------------------------------------------------------------------
# Sizes and durations people type, as the Node shim reads them.

# parse_size <text>: the one unit rule (src/services/human-size.ts parseSize): a whole number,
# optionally K, M, G or T read as powers of 1024 however spelled (10M, 10 MiB, 10mb), or B.
# Prints the bytes; fails unless it is a positive number below 2^53.
parse_size() {
  awk -v s="$1" 'BEGIN {
    sub(/^[ \t\r\n]+/, "", s); sub(/[ \t\r\n]+$/, "", s)
    if (!match(s, /^[0-9]+/)) exit 1
    n = substr(s, 1, RLENGTH); u = tolower(substr(s, RLENGTH + 1)); sub(/^ +/, "", u)
    sub(/^0+/, "", n) # busybox awk reads a leading 0 as octal
    if (u != "" && u != "b" && u !~ /^[kmgt](i?b)?$/) exit 1
    f = 1
    for (i = (u == "" ? 0 : index("kmgt", substr(u, 1, 1))); i > 0; i--) f *= 1024
    v = n * f
    if (v <= 0 || v > 9007199254740991) exit 1
    printf "%.0f", v
  }'
}

# parse_duration <text>: seconds in 90s, 10m, 24h, 7d, 2w, a sum such as 1h30m, or bare seconds
# (agent-shim/src/cli/duration.ts). Fails with 2 when it is no duration, 3 when it is not > 0.
parse_duration() {
  awk -v s="$1" 'BEGIN {
    sub(/^[ \t\r\n]+/, "", s); sub(/[ \t\r\n]+$/, "", s); s = tolower(s)
    m["s"] = 1; m["m"] = 60; m["h"] = 3600; m["d"] = 86400; m["w"] = 604800
    if (s ~ /^[0-9]+$/) { sub(/^0+/, "", s); v = s + 0 }
    else if (s ~ /^([0-9]+[smhdw])+$/) {
      while (match(s, /^[0-9]+[smhdw]/)) {
        n = substr(s, 1, RLENGTH - 1); sub(/^0+/, "", n) # not octal (busybox awk)
        v += n * m[substr(s, RLENGTH, 1)]
        s = substr(s, RLENGTH + 1)
      }
    } else exit 2
    if (v <= 0 || v > 9007199254740991) exit 3
    printf "%.0f", v
  }'
}

# ---------------------------------------------------------------------------------------------
# request: an upload link for a person (POST /v1/requests), as the Node shim's `request`.

REQUEST_USAGE='airlock request [--name <hint>] [--max-bytes <n>] [--expires <duration>] [--json] | airlock request --cancel <requestId>'

cmd_request() {
  r_name= r_max= r_expires= r_json= r_cancel= r_set=
  while [ $# -gt 0 ]; do
    case $1 in
      --name | --max-bytes | --expires | --cancel)
        [ $# -ge 2 ] || usage_error "option '$1 <value>' argument missing; usage: $REQUEST_USAGE"
        request_option "${1#--}" "$2"
        shift 2
        ;;
      --name=* | --max-bytes=* | --expires=* | --cancel=*)
        _opt=${1%%=*}
        request_option "${_opt#--}" "${1#*=}"
        shift
        ;;
      --json) r_json=1 && shift ;;
      -h | --help) usage_text && exit 0 ;;
      -*) usage_error "unknown option '${1%%=*}'; usage: $REQUEST_USAGE" ;;
      *) usage_error "request takes no arguments; usage: $REQUEST_USAGE" ;;
    esac
  done
  if [ -n "$r_cancel" ]; then
    [ -z "$r_set" ] || usage_error "--cancel takes only the request id; usage: $REQUEST_USAGE"
    setup
    check_id "$r_cancel" "request id"
    relay DELETE "/v1/requests/$r_cancel" "cancelling upload link $r_cancel"
    case $STATUS in 2??) ;; *) die "$(refusal "relay refused cancelling upload link $r_cancel" "$BODY")" ;; esac
    if [ -n "$r_json" ]; then cat "$BODY" && echo; else printf 'cancelled %s\n' "$(json_get "$FLAT" requestId)"; fi
    return
  fi
  body=
  if [ -n "$r_name" ]; then
    _json=$(json_string "$r_name") || die "--name contains a quote, a backslash or a control character"
    body=",\"name\":$_json"
  fi
  [ -z "$r_max" ] || body="$body,\"maxBytes\":$r_max"
  [ -z "$r_expires" ] || body="$body,\"ttlSeconds\":$r_expires"
  setup
  relay POST /v1/requests "the upload link request" -H 'content-type: application/json' \
    --data-binary "{${body#,}}"
  case $STATUS in 2??) ;; *) die "$(refusal "relay refused the upload link request" "$BODY")" ;; esac
  link=$(json_get "$FLAT" url)
  case $link in http://?* | https://?*) ;; *) die "relay gave an unexpected answer to the upload link request" ;; esac
  if [ -n "$r_json" ]; then
    cat "$BODY" && echo
    return
  fi
  printf '%s\n' "$link"
  # As the Node shim: on stderr, so that url=$(airlock request) still gets the link alone.
  printf 'from a terminal: curl --fail-with-body -T <file> %s/\n' "${link%/}" >&2
}

# request_option <name> <value>: one option of `request`, checked as the Node shim checks it.
request_option() {
  case $1 in
    name) r_name=$2 r_set=1 ;;
    cancel) r_cancel=$2 ;;
    max-bytes)
      r_max=$(parse_size "$2") ||
        usage_error "--max-bytes needs a positive number of bytes (e.g. 500M, 20G), not \"$2\"; usage: $REQUEST_USAGE"
      r_set=1
      ;;
    expires)
      r_expires=$(parse_duration "$2")
      case $? in
        0) r_set=1 ;;
        3) usage_error "--expires must be longer than 0 seconds; usage: $REQUEST_USAGE" ;;
        *) usage_error "--expires $2 is not a duration such as 90s, 10m, 24h or 7d; usage: $REQUEST_USAGE" ;;
      esac
      ;;
  esac
}

