def get_extracted(source, option, policy, limits, size=None):
    url, headers, target, name, sha256 = source
    if name is not None and archive_stem(name) is None:
        raise not_an_archive(name)
    directory = os.path.abspath(option)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise fs_error("create directory", option, err)
    temp = temp_path(directory, ".airlock-", ".tar.gz")
    try:
        _, got, _ = download(url, headers, target, name, sha256, ("path", temp), policy, size)
        stem = archive_stem(got)
        if stem is None:
            raise not_an_archive(got)
        return extract_archive(temp, clean_name(got, "the archive"), directory, stem, False, limits)[0]
    finally:
        release(temp)


def cmd_pull(args):
    spec = {
        "dir": (True, None, False),
        "json": (False, None, False),
        "extract": (False, None, False),
        "max-bytes": (True, None, False),
        "max-entries": (True, None, False),
        "readonly": (False, None, False),
        "wait": (False, None, False),
        "timeout": (True, None, False),
        "help": (False, "h", False),
    }
    values, positionals = parse_args(args, spec, USAGE["pull"])
    if values.get("help"):
        return out(command_help("pull"))
    if positionals:
        raise UsageError("pull takes no arguments; usage: " + USAGE["pull"])
    if values.get("dir") == "":
        raise UsageError("--dir needs a directory; usage: " + USAGE["pull"])
    check_extract_flags(values, USAGE["pull"])
    if values.get("timeout") is not None and not values.get("wait"):
        raise UsageError("--timeout needs --wait; usage: " + USAGE["pull"])
    timeout = None
    if values.get("timeout") is not None:
        timeout = parse_duration(values["timeout"], "--timeout", USAGE["pull"])
    limits = extract_limits(values, USAGE["pull"])
    directory = os.path.abspath(values.get("dir") or os.environ.get(INBOX_DIR_VAR) or DEFAULT_PULL_DIR)
    policy = Policy()
    relay = Relay(policy)
    items = wait_for_inbox(relay, timeout) if values.get("wait") else list_inbox(relay)
    if items is None:
        warn("nothing arrived in the inbox within " + shown_duration(timeout))
        return PULL_TIMEOUT_EXIT
    if not items:
        note("nothing new in the inbox")
        return 0
    extract_max = limits if values.get("extract") else None

    def pulled_one(pulled, line):
        out(to_json(pulled) if values.get("json") else line)

    failed = pull_items(relay, items, directory, policy, extract_max, values.get("readonly"), pulled_one)
    return 1 if failed else 0


def pull_items(relay, items, directory, policy, extract_max, readonly, pulled_one):
    """Writes `items` into `directory` (created if missing), oldest first, acknowledging each once
    it is there; shared by pull and the receive_files tool. Says whether any failed."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise fs_error("create directory", directory, err)
    failed = False
    for item in items:
        name = pulled_name(str(item.get("name") or ""))
        which = "item %s (%s)" % (shown_id(item.get("itemId")), name)
        try:
            pulled = pull_item(relay, item, name, directory, policy, extract_max)
            if readonly:
                make_read_only(pulled["path"])
        except CliError as err:
            if isinstance(err, UnavailableError):
                list_inbox(relay)
            warn("could not pull %s, it stays in the inbox: %s" % (which, err.message))
            failed = True
            continue
        if pulled.get("extracted"):
            pulled_one(pulled, "[User uploaded: %s (%s), extracted to %s/]" % (name, human_size(pulled["size"]), pulled["path"]))
        else:
            pulled_one(pulled, "[User uploaded: %s (%s) at %s]" % (name, human_size(pulled["size"]), pulled["path"]))
        try:
            relay.call("POST", "/v1/inbox/%s/ack" % quote(str(item.get("itemId")), safe=""), "acknowledging " + name)
        except CliError as err:
            if isinstance(err, UnavailableError):
                list_inbox(relay)
            warn("could not acknowledge %s: %s" % (which, err.message))
            failed = True
    return failed


def make_read_only(path):
    """--readonly: mode 0444 for a pulled file, or every regular file under an extracted
    directory (links not followed). A guard against accidental edits, not a lock."""
    try:
        info = os.lstat(path)
    except OSError as err:
        raise fs_error("read", path, err)
    if stat.S_ISREG(info.st_mode):
        try:
            os.chmod(path, 0o444)
        except OSError as err:
            raise fs_error("make read-only", path, err)
    elif stat.S_ISDIR(info.st_mode):
        try:
            names = os.listdir(path)
        except OSError as err:
            raise fs_error("read", path, err)
        for entry in names:
            make_read_only(os.path.join(path, entry))


def wait_for_inbox(relay, timeout):
    """pull --wait: the inbox's items once it holds any; None when `timeout` seconds passed first.
    Ctrl-C while waiting ends the run through the signal handler in run()."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = FIRST_POLL_S
    while True:
        items = list_inbox(relay)
        if items:
            return items
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return None
        time.sleep(pause if left is None else min(pause, left))
        pause = min(pause * 1.5, LAST_POLL_S)


def shown_duration(seconds):
    text = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        amount, seconds = divmod(seconds, size)
        if amount:
            text += "%d%s" % (amount, unit)
    return text or "0s"


def list_inbox(relay):
    answer = relay.call("GET", "/v1/inbox", "listing the inbox")
    items = answer.get("items") if isinstance(answer, dict) else None
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def shown_id(item_id):
    return re.sub(r"[^\x21-\x7e]", "?", str(item_id))[:100]


def pull_item(relay, item, shown, directory, policy, extract_max):
    file_id = (item.get("file") or {}).get("fileId") or item.get("fileId")
    if not file_id:
        raise CliError("relay listed %s in the inbox without its file" % shown)
    target = ("relay", relay.url, "download of " + shown)
    result = {
        "itemId": item.get("itemId"),
        "fileId": file_id,
        "name": item.get("name"),
        "size": 0,
        "sha256": item.get("sha256"),
        "path": "",
        "source": item.get("source"),
    }
    stem = archive_stem(shown)
    url = relay.content_url(file_id)
    if extract_max is not None and stem is not None:
        temp = temp_path(directory, ".airlock-", ".tar.gz")
        try:
            _, _, size = download(url, relay.auth(), target, shown, item.get("sha256"), ("path", temp), policy, item.get("size"))
            path, files = extract_archive(temp, shown, directory, stem, True, extract_max)
        finally:
            release(temp)
        result.update({"size": size, "path": path, "extracted": True, "files": files})
        return result
    path, _, size = download(url, relay.auth(), target, shown, item.get("sha256"), ("dir", directory, True), policy, item.get("size"))
    result.update({"size": size, "path": path})
    return result


def cmd_ls(args):
    values, positionals = parse_args(args, {"json": (False, None, False), "help": (False, "h", False)}, USAGE["ls"])
    if values.get("help"):
        return out(command_help("ls"))
    if positionals:
        raise UsageError("ls takes no arguments; usage: " + USAGE["ls"])
    answer = Relay(Policy()).call("GET", "/v1/files", "listing files")
    files = answer.get("files") or [] if isinstance(answer, dict) else []
    if values.get("json"):
        for record in files:
            out(to_json(record))
        return 0
    rows = [["ID", "SIZE", "EXPIRES", "NAME"]]
    for record in files:
        expires = str(record.get("expiresAt", ""))[:16].replace("T", " ") + "Z"
        rows.append([str(record.get("fileId")), human_size(record.get("size") or 0), expires, str(record.get("name"))])
    widths = [max(len(row[col]) for row in rows) for col in range(3)]
    for row in rows:
        out("  ".join(cell.ljust(widths[col]) if col < 3 else cell for col, cell in enumerate(row)))
    return 0


MAX_DOWNLOADS = 1000000


def link_options(expires, max_downloads, usage):
    """--expires and --max-downloads as a link's body, or None when neither is given."""
    if expires is None and max_downloads is None:
        return None
    body = {}
    if expires is not None:
        body["ttlSeconds"] = parse_duration(expires, "--expires", usage)
    if max_downloads is not None:
        n = int(max_downloads.strip()) if re.match(r"^\d+$", max_downloads.strip()) else 0
        if n < 1 or n > MAX_DOWNLOADS:
            raise UsageError(
                "--max-downloads must be a whole number from 1 to %d, not %s; usage: %s" % (MAX_DOWNLOADS, max_downloads, usage)
            )
        body["maxDownloads"] = n
    return body


def mint_link(relay, file_id, body):
    path = "/v1/files/%s/links" % quote(file_id, safe="")
    try:
        return relay.call("POST", path, "a new link to file " + file_id, body)
    except RefusalError as err:
        # The relay names its JSON field; the person typed --expires.
        if "ttlSeconds: " in err.message:
            err.message = err.message.replace("ttlSeconds: ", "--expires: ")
        raise


def cmd_link(args):
    spec = {
        "expires": (True, None, False),
        "max-downloads": (True, None, False),
        "json": (False, None, False),
        "help": (False, "h", False),
    }
    values, positionals = parse_args(args, spec, USAGE["link"])
    if values.get("help"):
        return out(command_help("link"))
    if len(positionals) != 1 or not positionals[0]:
        raise UsageError("link takes exactly one file id; usage: " + USAGE["link"])
    file_id = positionals[0]
    body = link_options(values.get("expires"), values.get("max-downloads"), USAGE["link"]) or {}
    minted = mint_link(Relay(Policy()), file_id, body)
    if values.get("json"):
        out(to_json({"fileId": file_id, "url": minted.get("url"), "expiresAt": minted.get("expiresAt"), "maxDownloads": minted.get("maxDownloads")}))
    else:
        out(str(minted.get("url")))
    return 0


