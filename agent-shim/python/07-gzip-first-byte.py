# Compressed parts PUT at once beside the one filling (each spooled to a temp file, not memory),
# and full parts held on disk (signed, in flight or waiting for a slot) before compression
# waits: more than those in flight, so that the cores go on compressing while PUTs are slow.
GZIP_PARTS_IN_FLIGHT = 2
GZIP_PARTS_SPOOLED = 5


def send_gzip_from_first_byte(sender, path, name, size, mtime, content_type):
    """A large file gzip pays for, sent as it compresses (docs/api.md, "gzip with the hash at
    complete"; the Node shim's send-gzip-first-byte.ts): declared with "encoding": "gzip" and no
    hashes; the file is read once, cut into spans gzipped as independent members (in a pool of
    threads, gzip_members), and the member stream cut into parts of part_size_for(size), each
    signed with its digest and length and PUT as soon as it is full. The original's SHA-256, the
    stored bytes' SHA-256 and the member table are taken on the way and go with complete.

    Resumable: the upload and each stored part's digest are saved, and a later send of the
    unchanged file compresses again and skips every part the store holds with the same digest.
    None when this way is not open (send_deferred)."""

    def declare(relay):
        declaration = {"name": name, "size": size, "contentType": content_type, "encoding": "gzip"}
        return declare_deferred(relay, dict(declaration, hashAtComplete=True))

    def send(upload, saved):
        return GzipParts(sender, path, name, size, upload, saved).send(mtime)

    return send_deferred(sender, path, name, size, mtime, "gzip", declare, send)


class GzipParts(object):
    """The member stream of a gzip upload declared without its hashes, cut into parts as it is
    made, each PUT on a thread of its own once full (GZIP_PARTS_IN_FLIGHT at once)."""

    def __init__(self, sender, path, name, size, upload, saved):
        self.sender, self.path, self.name, self.size = sender, path, name, size
        self.part_size = part_size_for(size)
        if upload.get("partSize") != self.part_size:
            raise CliError("relay planned the parts of %s differently than airlock did" % name)
        self.upload_id = upload["uploadId"]
        # Parts the store holds whose digest this or an earlier run noted: skipped if made the same.
        missing = set(upload["missing"])
        digests = saved.get("partDigests") if isinstance(saved.get("partDigests"), dict) else {}
        self.digests = dict((n, d) for n, d in digests.items() if n.isdigit() and int(n) not in missing)
        self.saved = saved
        self.cond = threading.Condition()
        self.saving = threading.Lock()
        self.slots = threading.Semaphore(min(sender.concurrency, GZIP_PARTS_IN_FLIGHT))
        self.spooled = 0
        self.uploaded = 0
        self.failure = None
        self.stop = threading.Event()

    def send(self, mtime):
        original = Digests()
        stored = Digests()
        sizes = []
        span = member_span_for(self.size)
        spans = spans_of(self.original_chunks(original, span), span)
        number = 0
        part = None
        threads = []
        try:
            for member in gzip_members(spans, self.sender.level, sizes, self.size > POOL_AFTER_MEMBERS * span):
                if self.failure is not None:
                    break
                stored.update(member)
                view = memoryview(member)
                while len(view):
                    if part is None:
                        part = GzipPartFile()
                    take = min(self.part_size - part.length, len(view))
                    part.write(view[:take])
                    view = view[take:]
                    if part.length == self.part_size:
                        number += 1
                        threads.extend(self.flush(number, part))
                        part = None
            if self.failure is None and (part is not None or number == 0):
                number += 1
                threads.extend(self.flush(number, part or GzipPartFile()))
                part = None
        except BaseException:
            self.stop.set()
            raise
        finally:
            if part is not None:
                part.close()
                release(part.path)
            for thread in threads:
                thread.join()
        if self.failure is not None:
            raise self.failure
        check_unchanged(self.path, original.size, self.size, mtime)
        body = {"sha256": original.hash.hexdigest(), "storedSize": stored.size}
        body["storedSha256"] = stored.hash.hexdigest()
        table = member_table(span, sizes)
        if table is not None:
            body["members"] = table
        record = self.sender.relay.complete(self.upload_id, self.name, body)
        return record, self.uploaded

    def original_chunks(self, original, span):
        for chunk in read_chunks(self.path, span=span):
            original.update(chunk)
            yield chunk

    def flush(self, number, part):
        """A full part (or the last): skipped when the store holds it already, else signed and
        PUT on a thread of its own once fewer than GZIP_PARTS_SPOOLED are on their way."""
        part.close()
        sha256 = part.hash.hexdigest()
        if self.digests.get(str(number)) == sha256:
            release(part.path)
            return []
        with self.cond:
            while self.spooled >= GZIP_PARTS_SPOOLED and self.failure is None:
                self.cond.wait()
            if self.failure is not None:
                release(part.path)
                return []
            self.spooled += 1
        thread = threading.Thread(target=self.put, args=(number, part, sha256))
        thread.daemon = True
        thread.start()
        return [thread]

    def put(self, number, part, sha256):
        """Signs the part as soon as it is full, PUTs it once a slot is free, notes its digest."""
        try:
            entry = {"partNumber": number, "sha256": sha256, "size": part.length}
            put = self.sender.relay.sign_parts(self.upload_id, self.name, [entry])[number]
            which = "%s (part %d)" % (self.name, number)
            with self.slots:
                if self.stop.is_set():
                    return
                policy = self.sender.policy
                put_slice(put, part.path, 0, part.length, sha256, self.name, which, policy, self.stop)
            with self.saving:
                with self.cond:
                    self.uploaded += part.length
                    self.digests[str(number)] = sha256
                    saved = dict(self.saved, partDigests=dict(self.digests))
                self.sender.states.save(saved)
        except BaseException as err:
            with self.cond:
                if self.failure is None:
                    self.failure = err
                    self.stop.set()
        finally:
            release(part.path)
            with self.cond:
                self.spooled -= 1
                self.cond.notify_all()


class GzipPartFile(object):
    """One part of a member stream, spooled to a temp file while it fills, hashed on the way."""

    def __init__(self):
        self.path = temp_path(tmpdir(), "airlock-", ".gzpart")
        self.sink = open_new_temp(self.path)
        self.hash = hashlib.sha256()
        self.length = 0

    def write(self, data):
        try:
            self.sink.write(data)
        except OSError as err:
            raise fs_error("write temp file", self.path, err)
        self.hash.update(data)
        self.length += len(data)

    def close(self):
        try:
            self.sink.close()
        except OSError as err:
            raise fs_error("write temp file", self.path, err)
