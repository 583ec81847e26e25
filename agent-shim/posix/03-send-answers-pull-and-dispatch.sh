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
  request)
    shift
    cmd_request "$@"
    ;;
  -h | --help | help) usage_text ;;
  -v | -V | --version) printf '%s\n' "$VERSION" ;;
  get | ls | tool-schema | link | rm | mcp) not_here "$1" ;;
  '') usage_error "a command is needed: send, pull or request (airlock --help)" ;;
  *) usage_error "unknown command: $1 (airlock --help)" ;;
esac
