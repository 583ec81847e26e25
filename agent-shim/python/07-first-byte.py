def send_from_first_byte(sender, path, name, size, mtime, content_type):
    """A large file sent as it is read (docs/api.md, "Sending from the first byte"): declared
    without its hashes, parts hashed ahead and signed with their digests, then PUT, the whole
    file hashed in a thread for complete (a dedup hit is found there). Resumable, and None when
    this way is not open (send_deferred)."""
    first = []

    def declare(relay):
        # Part 1's digest goes with the declare, whose answer then signs it: one round trip.
        first.append(part_digest(path, 0, min(part_size_for(size), size)))
        declaration = {"name": name, "size": size, "contentType": content_type, "encoding": "identity"}
        declaration["hashAtComplete"] = True
        return declare_deferred(relay, declaration, [{"partNumber": 1, "sha256": first[0]}])

    def send(upload, saved):
        whole = Background(lambda: whole_digest(path))
        parts = FirstByteParts(sender, path, name, size, upload)
        if first:
            parts.digests[0] = first[0]
        return parts.send(whole, mtime)

    return send_deferred(sender, path, name, size, mtime, "identity", declare, send)


def send_deferred(sender, path, name, size, mtime, encoding, declare, send):
    """The frame of a send from the first byte, either encoding: the file's saved upload of this
    kind as the relay has it now (a completed one is answered as it is), else a new one,
    `declare(relay)`'s answer, saved at once; then `send(upload, saved)` sends what is missing
    and answers (record, bytes uploaded). None when this way is not open: the relay predates it,
    or a saved upload of the file of another kind waits to be resumed its own way."""
    relay, states = sender.relay, sender.states
    key = upload_key(relay, path, size, mtime)
    saved = states.load(key, name)
    if saved is not None and (saved.get("sha256") != "" or saved.get("encoding") != encoding):
        return None
    upload = resumed_upload(sender, key, saved, name) if saved is not None else None
    if upload is not None and upload["status"] == "completed":
        states.remove(key)
        record = upload["file"]
        return result_of(record, bool(record.get("deduped")), 0)
    if upload is None:
        upload = declare(relay)
        if upload is None or upload["status"] != "multipart" or not isinstance(upload.get("missing"), list):
            return None
        saved = dict(key)
        stored_size = size if encoding == "identity" else 0  # a gzip's stored size is known at complete
        saved.update({"sha256": "", "encoding": encoding, "storedSize": stored_size, "storedSha256": ""})
        saved.update({"partSize": part_size_for(size), "uploadId": upload["uploadId"], "createdAt": now_iso()})
        states.save(saved, name)
    record, uploaded = send(upload, saved)
    states.remove(key)
    return result_of(record, bool(record.get("deduped")), uploaded)


def resumed_upload(sender, key, saved, name):
    """The saved upload as the relay has it now (multipart, or completed); None (and forgotten)
    when it is gone."""
    try:
        state = sender.relay.upload_state(saved["uploadId"], name)
        if state["status"] == "completed":
            return state
        if state["status"] == "multipart" and isinstance(state.get("missing"), list):
            return state
    except RefusalError:
        pass
    sender.states.remove(key)
    return None


def declare_deferred(relay, declaration, parts=None):
    """The answer to a declare without hashes, with the first parts' digests if given (a relay
    that takes the declare but not the digests gets it again without them); None from a relay
    that takes neither."""
    for body in (dict(declaration, parts=parts), declaration) if parts else (declaration,):
        try:
            return relay.declare(body)
        except RefusalError as err:
            if err.body.get("code") != "invalid_request":
                raise
    return None


def part_digest(path, start, length):
    """The SHA-256 of `length` bytes of the file from `start`."""
    part = hashlib.sha256()
    got = 0
    for chunk in read_chunks(path, start, length):
        part.update(chunk)
        got += len(chunk)
    if got != length:
        raise changed_while_sending(path)
    return part.hexdigest()


def whole_digest(path):
    digests = Digests()
    for chunk in read_chunks(path):
        digests.update(chunk)
    return digests.size, digests.hash.hexdigest()


class FirstByteParts(object):
    """The parts of an upload declared without its hashes, hashed in order ahead of their turn
    and signed in batches (PartSigner), each PUT (checked against its digest on the way out)."""

    def __init__(self, sender, path, name, size, upload):
        self.sender, self.path, self.name, self.size = sender, path, name, size
        self.part_size = part_size_for(size)
        self.count = part_count(size, self.part_size)
        if upload.get("partSize") != self.part_size or upload.get("partCount") != self.count:
            raise CliError("relay planned the parts of %s differently than airlock did" % name)
        self.upload_id = upload["uploadId"]
        self.missing = upload["missing"]
        # Parts the declare signed already (with the digest it carried).
        self.signed = dict((p.get("partNumber"), p.get("put")) for p in upload.get("parts") or [] if p.get("put"))
        self.digests = [None] * self.count
        self.turn = threading.Lock()

    def send(self, whole, mtime):
        relay = self.sender.relay
        uploaded = self.put(self.missing)
        size, sha256 = whole.result()
        check_unchanged(self.path, size, self.size, mtime)
        try:
            record = self.complete(sha256)
        except RefusalError as err:
            if err.body.get("code") != "upload_incomplete":
                raise
            state = relay.upload_state(self.upload_id, self.name)
            if state["status"] != "multipart" or not isinstance(state.get("missing"), list):
                raise
            uploaded += self.put(state["missing"])
            record = self.complete(sha256)
        return record, uploaded

    def complete(self, sha256):
        return self.sender.relay.complete(self.upload_id, self.name, {"sha256": sha256})

    def digest(self, number):
        with self.turn:
            if self.digests[number - 1] is None:
                start, length = part_span(self.size, self.part_size, number)
                self.digests[number - 1] = part_digest(self.path, start, length)
            return self.digests[number - 1]

    def sign(self, numbers):
        """Signs the parts `numbers` with their digests, in one request: {number: put}."""
        parts = [{"partNumber": n, "sha256": self.digests[n - 1]} for n in numbers]
        return self.sender.relay.sign_parts(self.upload_id, self.name, parts)

    def put(self, numbers):
        """PUTs the parts `numbers`, paced (each_part), each signed ahead of its turn
        (PartSigner); the first to fail for good stops the rest."""
        stop = threading.Event()
        numbers = sorted(numbers)
        sender = self.sender
        signer = PartSigner(self, numbers, sender.concurrency, self.signed)

        def one(index, stream):
            number = numbers[index]
            start, length = part_span(self.size, self.part_size, number)
            which = "%s (part %d of %d)" % (self.name, number, self.count)
            put = signer.put_for(index)
            sha256 = self.digests[number - 1]
            put_slice(put, self.path, start, length, sha256, self.name, which, sender.policy, stop, stream)
            return length

        remaining = sum(part_span(self.size, self.part_size, n)[1] for n in numbers)
        try:
            return each_part(sender.concurrency, list(range(len(numbers))), one, stop, sender.adaptive, remaining)
        finally:
            signer.stop()
