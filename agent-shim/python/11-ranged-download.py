# ---------------------------------------------------------------------------------------------
# Downloads in parallel byte ranges (as the Node shim's download/parallel-download.ts): a file of
# at least AIRLOCK_PARALLEL_THRESHOLD bytes whose HEAD names its SHA-256 comes in ranges over
# AIRLOCK_DOWNLOAD_STREAMS connections at once, on threads (socket reads, file writes and
# hashlib let go of the GIL). Each range is a GET of the same URL with Range and If-Range: the
# relay serves it (r2, gzip stored, a capped share link, which counts each range once) or
# redirects it to a presigned GET of exactly that range (s3). Each is written at its place in
# the part file and recorded once whole; the whole file's SHA-256 is computed in order as the
# bytes land (bytes landing ahead are read back once the hash reaches them: memory stays flat).

HASH_READ_BYTES = MiB


class WholeAnswer(CliError):
    """A range answered with the whole file (a relay that does not serve this one in ranges)."""


def maybe_ranged(url, headers, target, name, known, output, policy, size):
    """Downloads to a file ("path" or "dir" output) in ranges when it is large enough and the
    relay serves it so; (path, name, size), or None for one stream."""
    settings = parallel_settings()
    streams, threshold = settings[0], settings[1]
    if streams < 2 or (isinstance(size, int) and size < threshold):
        return None
    # Size and SHA-256 known (a file record, an inbox item): no HEAD, the ranges ask for
    # themselves, and a relay that answers one whole is asked again in one stream.
    asked = not (known and isinstance(size, int))
    hint = head_hint(url, headers) if asked else {"sha256": known, "size": size, "ranges": True}
    sha256 = known or hint.get("sha256")
    total = hint.get("size") or 0
    # Ranges only where the relay names the content: each range carries If-Range with it, and a
    # file still pending verification shows no ETag, so would come back whole.
    if not (hint.get("ranges") and sha256 and hint.get("sha256") == sha256 and total >= threshold):
        return None
    early = name or hint.get("name")
    got = early or "download"
    if output[0] == "path":
        directory = os.path.dirname(os.path.abspath(output[1]))
        # Into a temp file of the caller's (to extract it), the download cannot be resumed.
        part_name = None if output[1] in TEMPS else os.path.basename(output[1])
        path = output[1]
    else:
        directory = output[1]
        part_name = None if early is None else clean_name(early, "file")
        path = os.path.normpath(os.path.join(directory, clean_name(got, "file")))
        if not output[2]:
            refuse_existing(path)  # before the bytes, not after
    what = "the expected SHA-256" if known else "the ETag"
    corrupt = CliError("the %s is corrupt: its SHA-256 does not match %s" % (target[2], what))
    part, lock = open_part(directory, part_name, sha256)
    placed = False
    try:
        job = RangedDownload(url, headers, target, part, total, sha256, settings, policy)
        try:
            job.run(corrupt)
        except WholeAnswer:
            if asked:
                raise
            return None  # the part and its lock go below
        finally:
            forget_ranges(part)
        if output[0] == "path":
            try:
                os.rename(part, path)
            except OSError as err:
                raise fs_error("write", path, err)
        else:
            path = keep_temp(part, directory, clean_name(got, "file"), output[2])
        placed = True
        return path, got, total
    finally:
        if not placed:
            release(part)
        if lock is not None:
            release(lock)


class RangedDownload(object):
    def __init__(self, url, headers, target, part, size, sha256, settings, policy):
        self.url, self.headers, self.target, self.part = url, headers, target, part
        self.size, self.sha256, self.policy = size, sha256, policy
        self.streams = settings[0]
        self.chunk = settings[2] or default_chunk(size, settings[0])
        self.pieces = plan_pieces(part, size, self.chunk)
        held = sum(p.got for p in self.pieces)
        # Adaptive: the first range alone, the rest as one more until the first range says
        # more streams pay (`watch_first`).
        self.adaptive = settings[3] and held == 0 and self.chunk < size
        if self.adaptive:
            self.pieces = first_and_rest(size, self.chunk)
        self.missing = [p for p in self.pieces if p.got < p.end - p.start]
        self.threads = []
        self.watch = SplitProbe(size, self.decided) if self.adaptive else None
        self.next = 0
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.failure = None
        self.active = set()
        self.hash = hashlib.sha256()
        self.at = 0  # bytes hashed so far: the file's first `at`
        self.fd = None

    def run(self, corrupt):
        """Fetches the missing pieces, hashing the whole file in order on this thread; returns
        once the part file holds the verified file."""
        held = sum(p.got for p in self.pieces)
        try:
            self.fd = os.open(self.part, os.O_RDWR | os.O_CREAT, 0o666)
            if held == 0:
                os.ftruncate(self.fd, 0)
                forget_ranges(self.part)  # a record that no longer holds must not grow
        except OSError as err:
            raise fs_error("write", self.part, err)
        try:
            self.start(1 if self.adaptive else min(self.streams, len(self.missing)))
            try:
                digest = self.digest()
            except OSError as err:
                self.fail(fs_error("read", self.part, err))
                digest = None
            joined = 0
            while True:  # more may start while waiting
                with self.cond:
                    if joined == len(self.threads):
                        break
                    thread = self.threads[joined]
                thread.join()
                joined += 1
        finally:
            os.close(self.fd)
        if self.failure is not None:
            raise self.failure
        if digest != self.sha256:
            raise corrupt

    def start(self, count):
        with self.cond:
            for _ in range(count):
                thread = threading.Thread(target=self.stream, daemon=True)
                self.threads.append(thread)
                thread.start()

    def decided(self, pays):
        """The first range's `SplitProbe` has decided: if more streams pay, the rest (not yet
        begun: the one stream is still on the first range) is cut into ranges for every stream."""
        self.adaptive = False
        if not pays:
            return
        rest = plan_rest(self.pieces[0].end, self.size, self.chunk)
        with self.cond:
            self.pieces[1:] = rest
            self.missing[self.next:] = rest
        self.start(min(self.streams - 1, len(rest)))

    def fail(self, err):
        with self.cond:
            if self.failure is None:
                self.failure = err
            self.stop.set()
            conns = list(self.active)
            self.cond.notify_all()
        for conn in conns:
            if conn.sock is not None:
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stream(self):
        try:
            while not self.stop.is_set():
                with self.cond:
                    if self.next >= len(self.missing):
                        return
                    piece = self.missing[self.next]
                    self.next += 1
                with_retry(self.policy, self.target, lambda: self.fetch(piece), self.stop)
                if self.stop.is_set():
                    return
                record_piece(self.part, piece)
        except Exception as err:
            self.fail(err)

    def fetch(self, piece):
        """One attempt at the bytes `piece` is missing: a ranged GET (following a redirect to the
        store), its answer checked to be exactly that range of this file, written in place."""
        first, last = piece.start + piece.got, piece.end - 1
        sent = dict(self.headers)
        sent["range"] = "bytes=%d-%d" % (first, last)
        sent["if-range"] = '"%s"' % self.sha256
        conn, res, relay_etag = open_following(self.url, sent)
        with self.cond:
            self.active.add(conn)
        try:
            if self.stop.is_set():
                return
            self.check(res, relay_etag, first, last)
            while True:
                try:
                    # While the first range is watched, bytes as they come, not a whole CHUNK.
                    watched = self.adaptive and piece is self.pieces[0]
                    data = res.read1(CHUNK) if watched else res.read(CHUNK)
                except (OSError, http.client.HTTPException) as err:
                    if self.stop.is_set():
                        return
                    raise network_error(err)
                if not data:
                    break
                if len(data) > piece.end - piece.start - piece.got:
                    raise self.range_error("more bytes than the range asked for")
                if watched:
                    self.watch.heard(len(data))
                at = piece.start + piece.got
                try:
                    write_at(self.fd, data, at)
                except OSError as err:
                    raise fs_error("write", self.part, err)
                self.landed(piece, data, at)
        finally:
            with self.cond:
                self.active.discard(conn)
            conn.close()
        if piece.got < piece.end - piece.start and not self.stop.is_set():
            raise NetworkError("socket hang up", True)  # ended short of its Content-Length

    def check(self, res, relay_etag, first, last):
        """Refuses any answer but a 206 of exactly bytes first-last of this file."""
        if res.status == 200:
            raise self.range_error("the whole file came back for a byte range", WholeAnswer)
        if res.status != 206:
            raise status_error(res, read_text(res), "%s refused %s" % (self.target[0], self.target[2]))
        etag = etag_sha256(res, relay_etag)
        if etag is not None and etag != self.sha256:
            raise CliError("the %s is corrupt: its ETag does not match the expected SHA-256" % self.target[2])
        answered = re.fullmatch(r"bytes ([0-9]+)-([0-9]+)/([0-9]+)", res.getheader("content-range") or "")
        if not answered or tuple(int(n) for n in answered.groups()) != (first, last, self.size):
            raise self.range_error("answered bytes %d-%d with another range" % (first, last))

    def range_error(self, what, kind=CliError):
        return kind(
            "%s %s during the %s; AIRLOCK_DOWNLOAD_STREAMS=1 downloads in one stream" % (self.target[0], what, self.target[2])
        )

    def landed(self, piece, data, at):
        """Bytes just written at `at`: hashed now when the hash has reached them."""
        with self.cond:
            if at == self.at:
                self.hash.update(data)
                self.at += len(data)
            piece.got += len(data)
            self.cond.notify_all()

    def digest(self):
        """The whole file's SHA-256, in order, waiting for bytes not yet there (reading back
        those that landed ahead); None once a stream failed."""
        for piece in self.pieces:
            while True:
                with self.cond:
                    while not self.stop.is_set() and self.at < piece.end and self.at >= piece.start + piece.got:
                        self.cond.wait(1.0)
                    if self.stop.is_set():
                        return None
                    if self.at >= piece.end:
                        break
                    start = self.at
                    want = min(piece.start + piece.got - start, HASH_READ_BYTES)
                # No stream hashes at `start` meanwhile: every byte up to start + want is there.
                data = os.pread(self.fd, want, start)
                if not data:
                    raise OSError(errno.EIO, "the part file ended at %d" % start)
                with self.cond:
                    self.hash.update(data)
                    self.at = start + len(data)
        return self.hash.hexdigest()
