def cmd_send(args):
    spec = {
        "to": (True, None, True),
        "caption": (True, None, False),
        "json": (False, None, False),
        "wait": (False, None, False),
        "media-tag": (False, None, False),
        "name": (True, None, False),
        "expires": (True, None, False),
        "max-downloads": (True, None, False),
        "help": (False, "h", False),
    }
    values, paths = parse_args(args, spec, USAGE["send"])
    if values.get("help"):
        return out(command_help("send"))
    if not paths:
        raise UsageError("send needs at least one path; usage: " + USAGE["send"])
    destinations = []
    for to in values.get("to", []):
        if to not in destinations:
            destinations.append(to)
    for to in destinations:
        if not DESTINATION.match(to) or to.endswith("\n"):
            raise UsageError("--to %s is not %s; usage: %s" % (to, DESTINATION_SHAPES, USAGE["send"]))
    if values.get("caption") is not None and not destinations:
        raise UsageError("--caption needs --to; usage: " + USAGE["send"])
    rename = checked_name(values.get("name"), paths)
    link = link_options(values.get("expires"), values.get("max-downloads"), USAGE["send"])
    policy = Policy()
    relay = Relay(policy)
    sender = Sender(relay, policy)
    kinds = [(path, path != STDIN and check_sendable(path)) for path in paths]
    failed = False
    for path, is_dir in kinds:
        if path == STDIN:
            result = send_stdin(rename, sender)
        elif is_dir:
            result = send_directory(path, sender, rename)
        else:
            result = send_file(path, sender, rename)
        if link is not None:
            minted = mint_link(relay, result["fileId"], link)
            result["url"], result["expiresAt"] = minted.get("url"), minted.get("expiresAt")
        if result["status"] == "pending":
            if values.get("wait"):
                wait_verified(relay, result)
                result["status"] = "verified"
            else:
                note("%s is still being verified by the relay (send --wait waits for it)" % result["name"])
        if values.get("media-tag"):
            out("MEDIA:" + result["url"])
        elif not values.get("json"):
            out(result["url"])
        for to in destinations:
            delivery = deliver(relay, result, to, values.get("caption"))
            failed = failed or delivery.get("status") != "delivered"
            result["deliveries"].append(delivery)
        if values.get("json"):
            out(to_json(result))
    return 1 if failed else 0


def checked_name(name, paths):
    """--name: allowed with one path or - (otherwise named by its type: stdin_name), held to the
    name rule before anything is read."""
    if paths.count(STDIN) > 1:
        raise UsageError("- (standard input) can be sent only once; usage: " + USAGE["send"])
    if name is None:
        return None
    if len(paths) != 1:
        raise UsageError("--name names one file; give one path or -; usage: " + USAGE["send"])
    problem = name_problem(name)
    if problem:
        raise UsageError("--name %s %s; usage: %s" % (to_json(name), problem, USAGE["send"]))
    return name


def check_sendable(path):
    try:
        info = os.stat(path)
    except OSError as err:
        raise fs_error("read", path, err)
    if stat.S_ISDIR(info.st_mode):
        try:
            os.listdir(path)
        except OSError as err:
            raise fs_error("read", path, err)
        return True
    if not stat.S_ISREG(info.st_mode):
        raise UsageError("%s is not a regular file or a directory" % path)
    try:
        open(path, "rb").close()
    except OSError as err:
        raise fs_error("read", path, err)
    return False


def result_of(record, deduped, uploaded):
    return {
        "fileId": record.get("fileId"),
        "name": record.get("name"),
        "size": record.get("size"),
        "sha256": record.get("sha256"),
        "url": record.get("url"),
        "expiresAt": record.get("urlExpiresAt") or record.get("expiresAt"),  # the link's; the file's below
        "fileExpiresAt": record.get("expiresAt"),
        "status": "pending" if record.get("status") == "pending" else "verified",
        "deduped": deduped,
        "uploadedBytes": uploaded,
        "deliveries": [],
    }


def send_file(path, sender, rename=None):
    """A small file goes up in one request. Otherwise (or to a relay without that route): hash,
    probe for a dedup hit, gzip where it pays, declare, PUT, complete."""
    relay = sender.relay
    name = rename or os.path.basename(path.rstrip("/")) or path
    whole = None
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            sample = handle.read(min(SAMPLE_BYTES, info.st_size))
            if info.st_size <= SINGLE_UPLOAD_MAX_BYTES:
                whole = sample + handle.read(SINGLE_UPLOAD_MAX_BYTES + 1 - len(sample))
    except OSError as err:
        raise fs_error("read", path, err)
    size, mtime = info.st_size, mtime_ms(info)
    content_type, compressed = sniff(sample, size > len(sample))
    if whole is not None:
        if len(whole) != size:
            raise changed_while_sending(path)
        declaration, data = describe_in_memory(whole, name, sender.level, (content_type, compressed))
        small = sender.send_in_one_request(declaration, data)
        if small is not None:
            return small
    known = sender.sent.sha256_of(path, info)
    if known is not None:
        # A stale entry can only make this a hit on content the scope sent before (SentCache).
        probe = relay.declare({"name": name, "size": size, "sha256": known, "contentType": content_type})
        if probe["status"] == "deduped":
            return result_of(probe["file"], True, 0)
    pays = gzip_pays(size, sample, compressed, sender.level)
    if size > multipart_threshold():
        send_first = send_gzip_from_first_byte if pays else send_from_first_byte
        first = send_first(sender, path, name, size, mtime, content_type)
        if first is not None:
            sender.sent.record(path, info, first["sha256"])
            return first
    abandon = threading.Event()
    gzipping = [None]

    def start_gzip():
        level, part_size = sender.level, digest_part_size(size, True)
        gzipping[0] = Background(lambda: gzip_to_temp(path, level, part_size, abandon))

    # gzip runs alongside the hash pass, in a thread (zlib and hashlib let go of the GIL).
    if pays:
        start_gzip()
    part_size = None if pays else digest_part_size(size, False)
    parts = Background(lambda: file_part_digests(path, part_size, abandon)) if part_size else None
    stored = None
    try:
        digests = Digests()
        for chunk in read_chunks(path):
            digests.update(chunk)
        sha256 = digests.hash.hexdigest()
        original = {"name": name, "size": digests.size, "sha256": sha256, "contentType": content_type}
        probe = relay.declare(original)
        sender.sent.record(path, info, sha256)
        if probe["status"] == "deduped":
            return result_of(probe["file"], True, 0)
        if probe["status"] in ("upload", "multipart"):
            raise CliError("relay asked to upload %s before knowing how it is stored" % name)
        if pays:
            stored = gzipping[0].result()
        else:
            part_sha256 = parts.result() if parts else None
            stored = Stored("identity", path, digests.size, sha256, part_sha256, False)
        check_unchanged(path, digests.size, size, mtime)
        declaration = dict(original)
        declaration.update({"encoding": stored.encoding, "storedSize": stored.size, "storedSha256": stored.sha256})
        record, deduped, uploaded = sender.send_stored(declaration, stored, (path, mtime))
        return result_of(record, deduped, uploaded)
    finally:
        abandon.set()
        if stored is not None:
            stored.dispose()
        elif gzipping[0] is not None:
            try:
                gzipping[0].result().dispose()
            except BaseException:
                pass


def send_directory(path, sender, rename=None):
    try:
        mtime = mtime_ms(os.stat(path))
    except OSError as err:
        raise fs_error("read", path, err)
    archive, files = archive_directory(path, sender.level)
    try:
        declaration = {
            "name": rename or archive_name(path),
            "size": archive.size,
            "sha256": archive.sha256,
            "contentType": ARCHIVE_TYPE,
            "encoding": "identity",
            "storedSize": archive.size,
            "storedSha256": archive.sha256,
        }
        record, deduped, uploaded = sender.send_stored(declaration, archive, (path, mtime))
        result = result_of(record, deduped, uploaded)
        result["archive"] = True
        result["files"] = files
        return result
    finally:
        archive.dispose()


def send_stdin(name, sender):
    """`send -`: standard input, read as it comes. Whole in memory, and sent in one request, if
    it ends within the one-request limit; otherwise spooled to a temp file while it is hashed
    and gzipped (where the start of it shows gzip pays), then sent as any stored bytes are (in
    parts above the multipart threshold). Never resumed: a later run cannot read the same input
    again."""
    stored = None
    try:
        declaration, held = spool_stdin(name, sender.level)
        if isinstance(held, bytes):
            small = sender.send_in_one_request(declaration, held)
            if small is not None:
                return small
            declaration, held = stored_in_temp(declaration, held)
        stored = held
        record, deduped, uploaded = sender.send_stored(declaration, stored, None)
        return result_of(record, deduped, uploaded)
    finally:
        if stored is not None:
            stored.dispose()


# The extension of each type sniff tells, for standard input sent without --name.
STDIN_EXTENSIONS = {
    "text/plain; charset=utf-8": ".txt",
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "audio/wav": ".wav",
    "application/pdf": ".pdf",
    "application/zip": ".zip",
    "application/gzip": ".gz",
    "video/quicktime": ".mov",
    "video/mp4": ".mp4",
    "video/webm": ".webm",
    "video/x-matroska": ".mkv",
    "audio/ogg": ".ogg",
    "audio/flac": ".flac",
    "audio/mpeg": ".mp3",
    "application/zstd": ".zst",
    "application/x-xz": ".xz",
    "application/x-bzip2": ".bz2",
    "application/x-7z-compressed": ".7z",
}


def stdin_name(content_type):
    """`send -` without --name: stdin and the sniffed type's extension (.bin for unknown bytes)."""
    return "stdin" + STDIN_EXTENSIONS.get(content_type, ".bin")


