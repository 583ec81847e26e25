def read_stdin():
    try:
        return os.read(0, CHUNK)
    except OSError as err:
        raise fs_error("read", "standard input", err)


def spool_stdin(name, level):
    """Reads standard input once: (declaration, the stored bytes), in memory (bytes) if the
    input ends within the one-request limit, else in a temp file (Stored). A name of None is
    stdin_name of the sniffed type."""
    head, length = [], 0
    while length <= SINGLE_UPLOAD_MAX_BYTES:
        chunk = read_stdin()
        if not chunk:
            original = b"".join(head)
            sniffed = sniff(original, False)
            return describe_in_memory(original, name or stdin_name(sniffed[0]), level, sniffed)
        head.append(chunk)
        length += len(chunk)
    sample = b"".join(head)[:SAMPLE_BYTES]
    content_type, compressed = sniff(sample, True)
    name = name or stdin_name(content_type)
    gzip = gzip_pays(length, sample, compressed, level)
    temp = temp_path(tmpdir(), "airlock-stdin-", ".gz" if gzip else ".bin")
    # The total is still unknown: part digests at the smallest part size fit every input up
    # to tens of GB, and a pass of their own is taken for the rest.
    original = Digests(None if gzip else MIN_PART_BYTES)
    stored = Digests(MIN_PART_BYTES) if gzip else original
    sizes = []

    def chunks():
        chunk = b"".join(head)
        del head[:]  # given away: memory holds no more than the chunks in flight
        while chunk:
            if gzip:
                original.update(chunk)
            yield chunk
            chunk = read_stdin()

    with new_temp_file(temp) as sink:
        # Its length unknown, the input gets the usual span, and a pool once it proves long.
        out = gzip_members(spans_of(chunks(), MEMBER_SPAN), level, sizes, False) if gzip else chunks()
        for data in out:
            stored.update(data)
            sink.write(data)
    declaration = {
        "name": name,
        "size": original.size,
        "sha256": original.hash.hexdigest(),
        "contentType": content_type,
        "encoding": "gzip" if gzip else "identity",
        "storedSize": stored.size,
        "storedSha256": stored.hash.hexdigest(),
    }
    table = member_table(MEMBER_SPAN, sizes) if gzip else None
    parts = stored.finish_parts() if part_size_for(original.size) == MIN_PART_BYTES else None
    return declaration, Stored(declaration["encoding"], temp, stored.size, declaration["storedSha256"], parts, True, table)


def describe_in_memory(original, name, level, sniffed=None):
    """Bytes small enough to hold: their declaration, and the bytes to store (gzipped where
    that saves enough). `sniffed` is (content type, compressed) when the caller has it."""
    content_type, compressed = sniffed or sniff(original, False)
    sha256 = hashlib.sha256(original).hexdigest()
    size = len(original)
    declaration = {"name": name, "size": size, "sha256": sha256, "contentType": content_type}
    # Past the sample's size, the sample decides first: random bytes are not gzipped whole.
    sample = original[:SAMPLE_BYTES]
    worth_trying = size >= MIN_GZIP_BYTES and not compressed
    if worth_trying and (size <= SAMPLE_BYTES or gzip_pays(size, sample, compressed, level)):
        sizes = []
        gzipped = b"".join(gzip_members(spans_of([original], MEMBER_SPAN), level, sizes, False, 1))
        if len(gzipped) <= size * (1 - MIN_GZIP_SAVING):
            stored_sha256 = hashlib.sha256(gzipped).hexdigest()
            declaration.update({"encoding": "gzip", "storedSize": len(gzipped), "storedSha256": stored_sha256})
            declaration["members"] = member_table(MEMBER_SPAN, sizes)
            return declaration, gzipped
    declaration.update({"encoding": "identity", "storedSize": size, "storedSha256": sha256})
    return declaration, original


def stored_in_temp(declaration, data):
    """Bytes held in memory, in a temp file to be PUT."""
    temp = temp_path(tmpdir(), "airlock-", ".bin")
    with new_temp_file(temp) as sink:
        sink.write(data)
    stored = Stored(declaration["encoding"], temp, declaration["storedSize"], declaration["storedSha256"], None, True, declaration.get("members"))
    return declaration, stored


def deliver(relay, result, to, caption):
    name = result["name"]
    key = hashlib.sha256(to_json([result["fileId"], to, caption]).encode("utf-8")).hexdigest()
    payload = {"to": to}
    if caption is not None:
        payload["caption"] = caption
    try:
        record = relay.call(
            "POST",
            "/v1/files/%s/deliveries" % quote(result["fileId"], safe=""),
            "delivery of %s to %s" % (name, to),
            payload,
            key,
        )
        message_id = record.get("messageId")
        if record.get("status") != "delivered" or not isinstance(message_id, str) or not message_id:
            # Delivered means the platform acknowledged the message with an id; nothing less.
            error = record.get("error")
            if isinstance(error, str):
                reason = error
            elif record.get("status") == "delivered":
                reason = "the platform gave no message id"
            else:
                reason = "it is %s" % record.get("status")
            warn("delivery of %s to %s failed: %s" % (name, to, reason))
            refused = dict(record)
            refused.update({"status": "failed", "error": reason})
            return refused
        how = "native, %s" % record.get("method") if record.get("mode") == "native" else record.get("mode")
        note("delivered %s to %s (%s)" % (name, to, how))
        return record
    except CliError as err:
        refusal = err if isinstance(err, RefusalError) else None
        warn("delivery of %s to %s failed: %s" % (name, to, refusal.detail if refusal else err.message))
        error = {
            "code": refusal.body.get("code") if refusal else None,
            "message": (refusal.body.get("message") if refusal else None) or err.message,
        }
        return {"fileId": result["fileId"], "to": to, "status": "failed", "error": error}


def wait_verified(relay, result):
    started = time.time()
    delay = 0.25
    while time.time() - started < WAIT_LIMIT_S:
        time.sleep(delay)
        delay = min(delay * 2, 5)
        try:
            record = relay.get_file(result["fileId"])
        except RefusalError as err:
            if err.status == 404:
                raise CliError(
                    "%s failed the relay's check (its stored bytes were not the declared content) and was deleted"
                    % result["name"]
                )
            raise
        if record.get("status") != "pending":
            return
    raise CliError("%s was still being verified after 30 minutes; check it with ls" % result["name"])


# ---------------------------------------------------------------------------------------------
# Archives: a directory as a .tar.gz (ustar, pax headers where needed), and safe extraction.

BLOCK = 512


def padding(size):
    return b"\x00" * ((BLOCK - size % BLOCK) % BLOCK)


def fits_ustar(text):
    return len(text.encode("utf-8", "surrogateescape")) <= 100 and re.match(r"^[\x20-\x7e]*$", text) is not None


def ascii_fallback(text):
    return re.sub(r"[^\x20-\x7e]", "_", text)[-100:]


def pax_record(key, value):
    rest = (" %s=%s\n" % (key, value)).encode("utf-8", "surrogateescape")
    length = len(rest) + 1
    while len(str(length)) + len(rest) != length:
        length += 1
    return str(length).encode("ascii") + rest


def ustar_block(name, mode, size, mtime, flag, linkname):
    block = bytearray(BLOCK)

    def put(offset, length, data):
        data = data[:length]
        block[offset : offset + len(data)] = data

    def octal(offset, length, value):
        put(offset, length, (("%0" + str(length - 1) + "o") % value).encode("ascii") + b"\x00")

    put(0, 100, name.encode("utf-8", "surrogateescape"))
    octal(100, 8, mode & 0o7777)
    octal(108, 8, 0)
    octal(116, 8, 0)
    octal(124, 12, size)
    octal(136, 12, max(0, int(mtime)))
    put(148, 8, b" " * 8)
    put(156, 1, flag.encode("ascii"))
    put(157, 100, linkname.encode("utf-8", "surrogateescape"))
    put(257, 8, b"ustar\x0000")
    put(148, 8, ("%06o" % sum(block)).encode("ascii") + b"\x00 ")
    return bytes(block)


MAX_USTAR_SIZE = 0o77777777777


def encode_header(name, kind, mode, mtime, size=0, linkname=""):
    flag = {"file": "0", "directory": "5", "symlink": "2"}[kind]
    if kind == "directory":
        name += "/"
    pax = []
    if not fits_ustar(name):
        pax.append(("path", name))
    if linkname and not fits_ustar(linkname):
        pax.append(("linkpath", linkname))
    if size > MAX_USTAR_SIZE:
        pax.append(("size", str(size)))
    main = ustar_block(
        name if fits_ustar(name) else ascii_fallback(name),
        mode,
        0 if size > MAX_USTAR_SIZE else size,
        mtime,
        flag,
        linkname if fits_ustar(linkname) else ascii_fallback(linkname),
    )
    if not pax:
        return main
    body = b"".join(pax_record(k, v) for k, v in pax)
    head = ustar_block(ascii_fallback("PaxHeaders/" + name.rstrip("/").split("/")[-1]), 0o644, len(body), mtime, "x", "")
    return head + body + padding(len(body)) + main


def archive_name(path):
    return clean_name(os.path.basename(os.path.abspath(path)), "archive") + ".tar.gz"


