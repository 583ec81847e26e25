def read_chunks(path, start=0, length=None, span=CHUNK):
    """The bytes of a file in chunks of span bytes; a failure to read is reported as such."""
    try:
        handle = open(path, "rb")
    except OSError as err:
        raise fs_error("read", path, err)
    with handle:
        try:
            handle.seek(start)
            left = length
            while left is None or left > 0:
                chunk = handle.read(span if left is None else min(span, left))
                if not chunk:
                    break
                if left is not None:
                    left -= len(chunk)
                yield chunk
        except OSError as err:
            raise fs_error("read", path, err)


def gzip_pays(size, sample, compressed, level):
    if size < MIN_GZIP_BYTES or compressed:
        return False
    z = zlib.compressobj(level, zlib.DEFLATED, 31)
    gzipped = len(z.compress(sample) + z.flush())
    return gzipped <= len(sample) * (1 - MIN_GZIP_SAVING)


TEMPS = set()


def temp_path(directory, prefix, suffix):
    path = os.path.join(directory, prefix + os.urandom(6).hex() + suffix)
    TEMPS.add(path)
    return path


def release(path):
    TEMPS.discard(path)
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            import shutil

            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def open_new_temp(temp):
    """`temp` made now (never an existing file) and opened for writing; an OSError told as one
    line about it, `temp` released."""
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        return os.fdopen(fd, "wb")
    except OSError as err:
        release(temp)
        raise fs_error("write temp file", temp, err)


@contextlib.contextmanager
def new_temp_file(temp):
    """`temp` created for writing (never an existing file); removed if anything fails meanwhile,
    an OSError told as one line about it."""
    sink = open_new_temp(temp)
    try:
        with sink:
            yield sink
    except OSError as err:
        release(temp)
        raise fs_error("write temp file", temp, err)
    except BaseException:
        release(temp)
        raise


def tmpdir():
    import tempfile

    return tempfile.gettempdir()


class Stored(object):
    """The bytes to upload: the file itself, or a temp file (gzip, an archive). `members` is the
    member table of gzip written as independent members, to declare."""

    def __init__(self, encoding, path, size, sha256, parts, temp, members=None):
        self.encoding = encoding
        self.path = path
        self.size = size
        self.sha256 = sha256
        self.parts = parts
        self.temp = temp
        self.members = members

    def dispose(self):
        if self.temp:
            release(self.path)


# gzip as independent members: the original cut into spans of a fixed size, each span gzipped
# on its own into a complete gzip stream, the members concatenated (still one valid .gz). The
# member table (the span, each member's stored size) goes with the declaration, so the relay
# inflates only the members a read touches; and members compress on every core at once.
MEMBER_SPAN = MiB
MAX_MEMBER_SPAN = 4 * MiB
MAX_MEMBERS = 10000
# Members a stream gzips on the calling thread before it starts a pool (16 MiB at 1 MiB).
POOL_AFTER_MEMBERS = 16


def member_span_for(size):
    """1 MiB, or just enough more for the table to stay within MAX_MEMBERS (past about 39 GiB
    the members are written but not declared)."""
    return min(MAX_MEMBER_SPAN, max(MEMBER_SPAN, -(-size // MAX_MEMBERS)))


def member_table(span, sizes):
    return {"span": span, "storedSizes": sizes} if len(sizes) <= MAX_MEMBERS else None


def gzip_member(data, level):
    """One span as a complete gzip stream (zlib lets go of the GIL while it works)."""
    z = zlib.compressobj(level, zlib.DEFLATED, 31)
    return z.compress(data) + z.flush()


def compression_threads():
    """AIRLOCK_GZIP_THREADS (1-64) over the cores, at most 8: as the Node shim has it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return integer_var("AIRLOCK_GZIP_THREADS", max(1, min(8, cores or 1)), 1, 64)


def spans_of(chunks, span):
    """A byte stream cut into span-sized pieces: the last may be shorter; no bytes make one empty."""
    held = bytearray()
    cut = False
    for chunk in chunks:
        if not held and len(chunk) == span:
            cut = True
            yield chunk
            continue
        held += chunk
        while len(held) >= span:
            cut = True
            yield bytes(memoryview(held)[:span])
            del held[:span]
    if held or not cut:
        yield bytes(held)


def gzip_members(spans, level, sizes, known_large, threads=None):
    """The gzip members of spans, in order, noting each one's size in sizes. Past a few members
    (at once when known_large) they are gzipped in a pool of threads, at most two per thread
    under way (memory stays flat); on one core, or with threads=1, on the calling thread."""
    threads = compression_threads() if threads is None else threads
    pool, pending = None, []
    try:
        for count, data in enumerate(spans, 1):
            if pool is None and threads > 1 and (known_large or count > POOL_AFTER_MEMBERS):
                pool = ThreadPoolExecutor(threads)
            pending.append(pool.submit(gzip_member, data, level) if pool else data)
            while pending and (pool is None or len(pending) >= 2 * threads):
                yield _member_done(pending.pop(0), level, sizes)
        while pending:
            yield _member_done(pending.pop(0), level, sizes)
    finally:
        if pool is not None:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=False)


def _member_done(item, level, sizes):
    member = gzip_member(item, level) if isinstance(item, bytes) else item.result()
    sizes.append(len(member))
    return member


def gzip_to_temp(path, level, part_size, abandon, threads=None):
    temp = temp_path(tmpdir(), "airlock-", ".gz")
    digests = Digests(part_size)
    sizes = []
    with new_temp_file(temp) as sink:
        size = os.stat(path).st_size
        span = member_span_for(size)
        spans = spans_of(read_chunks(path, span=span), span)
        known_large = size > POOL_AFTER_MEMBERS * span
        for member in gzip_members(spans, level, sizes, known_large, threads):
            if abandon.is_set():
                raise CliError("abandoned")
            digests.update(member)
            sink.write(member)
    table = member_table(span, sizes)
    return Stored("gzip", temp, digests.size, digests.hash.hexdigest(), digests.finish_parts(), True, table)


def changed_while_sending(path):
    return CliError("%s changed while it was being sent; send it again once it is complete" % path)


def check_unchanged(path, read_size, size, mtime):
    """Refuses a send whose file changed while it was read (`read_size` bytes of `size`)."""
    try:
        now = os.stat(path)
    except OSError:
        now = None
    if read_size != size or now is None or now.st_size != size or mtime_ms(now) != mtime:
        raise changed_while_sending(path)


class Background(object):
    """Runs fn in a thread; result() returns its value or raises its error."""

    def __init__(self, fn):
        self.value = None
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(fn,))
        self.thread.daemon = True
        self.thread.start()

    def _run(self, fn):
        try:
            self.value = fn()
        except BaseException as err:  # handed to result()
            self.error = err

    def result(self):
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.value


# ---------------------------------------------------------------------------------------------
# Uploads: one PUT, or parts several at once, saved so that a later send resumes.


def upload_target(put_url, action):
    parts = urlsplit(put_url)
    origin = "%s://%s" % (parts.scheme, parts.netloc)
    service = "relay" if "/v1/blob-uploads/" in parts.path else "storage"
    return (service, origin + parts.path, action)


def put_slice(put, path, start, length, sha256, label, which, policy, stop=None, stream=None):
    """PUTs `length` bytes of a file from `start`, checked against their digest on the way;
    `stream` (a PartStream) hears of the bytes as they go and once they all have."""
    target = upload_target(put["url"], "upload of " + which)
    headers = dict(put.get("headers") or {})

    def attempt():
        digest = hashlib.sha256()
        state = {"bytes": 0}

        def body():
            for chunk in read_chunks(path, start, length):
                digest.update(chunk)
                state["bytes"] += len(chunk)
                yield chunk
                if MCP_CALL is not None:
                    MCP_CALL.moved(len(chunk))  # sent: the next one is asked for
                if stream is not None:
                    stream.moved(len(chunk))
            if state["bytes"] != length or digest.hexdigest() != sha256:
                raise changed_while_sending(label)
            if stream is not None:
                stream.sent()

        conn, res = open_request(put.get("method") or "PUT", put["url"], headers, body(), length)
        try:
            text = read_text(res)
        finally:
            conn.close()
        if 200 <= res.status < 300:
            return
        raise status_error(res, text, "%s refused upload of %s" % (target[0], which), storage_retryable)

    with_retry(policy, target, attempt, stop)


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "airlock")


