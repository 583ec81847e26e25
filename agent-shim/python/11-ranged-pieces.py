# ---------------------------------------------------------------------------------------------
# Ranged downloads, their settings and their part files (as the Node shim's
# download/parallel-settings.ts, parallel-pieces.ts and upload/part-file.ts): the same variables,
# the same part file `.<name>.<sha256 first 16 hex>.airlock-part` guarded by a `.lock` holding
# the pid, and the same `<part>.ranges` record, so that a run of either shim killed mid-way is
# resumed by the next run of either. Also the HEAD asked first and the positioned write.

DEFAULT_DOWNLOAD_STREAMS = 4
DEFAULT_PARALLEL_THRESHOLD = 16 * MiB
MIN_DOWNLOAD_CHUNK = 64 * 1024  # the smallest range a knob may ask for (tests use it)
PART_NAME_BYTES = 200  # of a file's name kept in its part file's name
STALE_LOCK_S = 60


# How long the first range of an adaptive download is watched, and the rule it is judged by:
# a stream this fast is left alone (loopback, a link near the host); parallel streams pay where
# one TCP stream is held back by latency and loss, and only when more than a second is left.
PROBE_BYTES = 4 * MiB
PROBE_S = 0.3
SPLIT_BELOW_BYTES_PER_S = 16 * MiB
SPLIT_AFTER_S = 1


def parallel_settings():
    """(streams, threshold, chunk, adaptive): AIRLOCK_DOWNLOAD_STREAMS (1-16; 1 turns ranges
    off; unset: adaptive, the other streams open only when the first range shows they pay),
    AIRLOCK_PARALLEL_THRESHOLD and AIRLOCK_DOWNLOAD_CHUNK (bytes; None: default_chunk)."""
    streams = integer_var("AIRLOCK_DOWNLOAD_STREAMS", DEFAULT_DOWNLOAD_STREAMS, 1, 16)
    adaptive = not os.environ.get("AIRLOCK_DOWNLOAD_STREAMS", "").strip()
    threshold = integer_var("AIRLOCK_PARALLEL_THRESHOLD", DEFAULT_PARALLEL_THRESHOLD, 1, 2 ** 50)
    chunk = None
    if os.environ.get("AIRLOCK_DOWNLOAD_CHUNK", "").strip():
        chunk = integer_var("AIRLOCK_DOWNLOAD_CHUNK", MIN_DOWNLOAD_CHUNK, MIN_DOWNLOAD_CHUNK, 2 ** 40)
    return streams, threshold, chunk, adaptive


def split_pays(count, seconds, remaining):
    """Whether to open more streams, from the first range: `count` bytes arrived in the
    `seconds` after its first chunk, `remaining` bytes of the file not yet arrived."""
    rate = count / max(seconds, 0.001)
    return rate < SPLIT_BELOW_BYTES_PER_S and remaining / rate > SPLIT_AFTER_S


class SplitProbe(object):
    """Watches one stream's bytes as they go (`heard`), from its first chunk on, for PROBE_BYTES
    or PROBE_S, whichever comes first, then calls decide(split_pays(...)) once: `remaining` is
    what the transfer had left to move when the watch began. A stream that ends before the watch
    does was fast, and nothing more opens. Shared by ranged downloads (their first range) and
    multipart uploads (their parts in flight), as the Node shim's splitProbe."""

    def __init__(self, remaining, decide):
        self.remaining, self.decide = remaining, decide
        self.lock = threading.Lock()
        self.decided = False
        self.since = None
        self.count = 0
        self.moved = 0

    def heard(self, length):
        if self.decided:
            return
        with self.lock:
            if self.decided:
                return
            self.moved += length
            now = time.monotonic()
            if self.since is None:
                self.since = now
                return
            self.count += length
            seconds = now - self.since
            if self.count < PROBE_BYTES and seconds < PROBE_S:
                return
            self.decided = True
            pays = split_pays(self.count, seconds, self.remaining - self.moved)
        self.decide(pays)


def first_and_rest(size, chunk):
    """A fresh adaptive download's first range, `chunk` bytes, and the rest of the file as one."""
    return [Piece(0, chunk, 0), Piece(chunk, size, 0)]


def plan_rest(start, size, chunk):
    """[start, size) in `chunk`-byte pieces."""
    return [Piece(at, min(at + chunk, size), 0) for at in range(start, size, chunk)]


def default_chunk(size, streams):
    """Two ranges per stream, from 4 to 32 MiB: each range costs a request (on s3 two), and
    ranges landing ahead of the hash are read back once it reaches them."""
    return min(32 * MiB, max(4 * MiB, -(-size // (2 * streams))))


class Piece(object):
    """One byte range [start, end) of a ranged download, of which the first `got` are on disk."""

    __slots__ = ("start", "end", "got")

    def __init__(self, start, end, got):
        self.start, self.end, self.got = start, end, got


def open_part(directory, name, sha256):
    """(path, lock): the resumable part file for `name`, or a temp file of this run only when
    the name or hash is unknown or another live run holds that part file."""
    if name is not None and sha256 is not None:
        path = os.path.join(directory, ".%s.%s.airlock-part" % (truncate_utf8(name, PART_NAME_BYTES), sha256[:16]))
        if take_lock(path + ".lock"):
            return path, path + ".lock"
    return temp_path(directory, ".airlock-", ".part"), None


def take_lock(path):
    """Claims a lock file for this process, taking over one whose process is gone."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            pass
        except OSError:
            return False
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(str(os.getpid()))
            return True
        try:
            with open(path) as handle:
                text = handle.read().strip()
        except OSError:
            text = ""
        pid = int(text) if re.fullmatch("[0-9]+", text) else 0
        # An empty lock may be one another run has created but not yet written its pid into.
        if pid <= 0 and not lock_is_old(path):
            return False
        if pid_alive(pid):
            return False
        try:
            os.unlink(path)
        except OSError:
            pass
    return False


def lock_is_old(path):
    try:
        return time.time() - os.stat(path).st_mtime > STALE_LOCK_S
    except OSError:
        return True


def pid_alive(pid):
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
        return True
    except PermissionError:
        return True
    except OSError:
        return False


def ranges_path(part):
    return part + ".ranges"


def forget_ranges(part):
    try:
        os.unlink(ranges_path(part))
    except OSError:
        pass


def record_piece(part, piece):
    """Notes that all of a piece's bytes are on disk: one `<start> <end>` line."""
    try:
        with open(ranges_path(part), "a") as handle:
            handle.write("%d %d\n" % (piece.start, piece.end))
    except OSError as err:
        raise fs_error("write", ranges_path(part), err)


def plan_pieces(part, size, chunk):
    """The pieces of a `size`-byte file in order: those the part file already holds (whole),
    then the rest cut into `chunk`-byte pieces."""
    pieces = []
    at = 0
    for start, end in held_ranges(part, size):
        for first in range(at, start, chunk):
            pieces.append(Piece(first, min(first + chunk, start), 0))
        pieces.append(Piece(start, end, end - start))
        at = end
    return pieces + plan_rest(at, size, chunk)


def held_ranges(part, size):
    """The ranges already on disk, sorted and disjoint: from the `.ranges` record when there is
    one (a line that does not parse, overlaps, or passes `size` or the part file's end voids it
    all), else the start a one-stream run left (none when the part is longer than the file)."""
    try:
        length = os.stat(part).st_size
    except OSError:
        length = 0
    try:
        with open(ranges_path(part), "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return [(0, length)] if 0 < length <= size else []
    except OSError as err:
        raise fs_error("read", ranges_path(part), err)
    ranges = []
    for line in text.split("\n"):
        match = re.fullmatch(r"([0-9]+) ([0-9]+)", line)
        if match:
            ranges.append((int(match.group(1)), int(match.group(2))))
        elif line != "":
            return []
    ranges.sort()
    previous_end = 0
    for start, end in ranges:
        if start < previous_end or end <= start or end > min(size, length):
            return []
        previous_end = end
    return ranges


def head_hint(url, headers):
    """What a HEAD says before the bytes: {sha256, name, size, ranges}. Best effort: anything
    but a 200 or 206 says nothing (the GET then reports the failure properly)."""
    try:
        conn, res = open_request("HEAD", url, headers)
    except NetworkError:
        return {}
    try:
        if res.status not in (200, 206):
            return {}
        hint = {"sha256": etag_sha256(res), "name": disposition_name(res.getheader("content-disposition"))}
        if res.status == 200:
            length = res.getheader("content-length") or ""
            hint["size"] = int(length) if re.fullmatch("[0-9]+", length) else None
            hint["ranges"] = res.getheader("accept-ranges") == "bytes"
        return hint
    finally:
        conn.close()


def write_at(fd, data, at):
    view = memoryview(data)
    while len(view):
        written = os.pwrite(fd, view, at)
        view = view[written:]
        at += written
