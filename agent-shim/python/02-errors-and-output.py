# ---------------------------------------------------------------------------------------------
# Errors and output: every failure ends as one `airlock: <message>` line.


class CliError(Exception):
    def __init__(self, message, exit_code=1):
        Exception.__init__(self, message)
        self.message = message
        self.exit_code = exit_code


class UsageError(CliError):
    def __init__(self, message):
        CliError.__init__(self, message, 2)


class RefusalError(CliError):
    """A server's final answer refusing a request."""

    def __init__(self, message, status, detail, body):
        CliError.__init__(self, message)
        self.status = status
        self.detail = detail
        self.body = body


class UnavailableError(CliError):
    """A service that stayed unreachable or failing through every retry."""


class NetworkError(Exception):
    def __init__(self, reason, transient):
        Exception.__init__(self, reason)
        self.reason = reason
        self.transient = transient


class RetryableStatus(Exception):
    def __init__(self, status, detail, retry_after):
        Exception.__init__(self, detail)
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


FS_REASONS = {
    errno.ENOENT: "no such file or directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "not a directory",
    errno.EISDIR: "is a directory",
    errno.ELOOP: "too many levels of symbolic links",
    errno.ENAMETOOLONG: "file name too long",
    errno.EMFILE: "too many open files",
    errno.ENOSPC: "no space left on device",
    errno.EROFS: "read-only file system",
    errno.EEXIST: "file already exists",
    errno.EIO: "input/output error",
}

NETWORK_REASONS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.ETIMEDOUT: "timed out",
    errno.EPIPE: "connection closed while sending",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
}
TRANSIENT_ERRNOS = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ETIMEDOUT, errno.EPIPE}


def fs_error(verb, path, err):
    reason = FS_REASONS.get(getattr(err, "errno", None)) or getattr(err, "strerror", None) or str(err)
    return CliError("cannot %s %s: %s" % (verb, path, reason))


def network_error(err):
    """A failed connection as a NetworkError, saying whether another try may help."""
    if isinstance(err, NetworkError):
        return err
    if isinstance(err, socket.timeout):
        return NetworkError("timed out", True)
    if isinstance(err, socket.gaierror):
        temporary = err.errno == socket.EAI_AGAIN
        return NetworkError("temporary DNS failure" if temporary else "host not found", temporary)
    if isinstance(err, (http.client.RemoteDisconnected, http.client.IncompleteRead)):
        return NetworkError("socket hang up", True)
    code = getattr(err, "errno", None)
    if code in NETWORK_REASONS:
        return NetworkError(NETWORK_REASONS[code], code in TRANSIENT_ERRNOS)
    if isinstance(err, (http.client.HTTPException, ConnectionError)):
        return NetworkError("connection reset", True)
    return NetworkError(getattr(err, "strerror", None) or str(err) or type(err).__name__, False)


def _out(stream, line):
    stream.buffer.write((line + "\n").encode("utf-8", "replace"))
    stream.buffer.flush()


def out(line):
    """One line on stdout: a result."""
    _out(sys.stdout, line)


def note(line):
    """One line on stderr: information."""
    _out(sys.stderr, line)


def one_line(text):
    flat = re.sub("[\x00-\x1f\x7f]+", " ", text).strip()
    return flat[: MAX_LINE - 1] + "\u2026" if len(flat) > MAX_LINE else flat


def warn(message):
    line = "airlock: " + one_line(message)
    if MCP_CALL is not None:
        MCP_CALL.warnings.append(line)  # a tool's result carries the lines its failures print
    note(line)


# ---------------------------------------------------------------------------------------------
# The name rule (src/names.ts): names from people are cleaned, never refused.

# Controls, line separators, bidi marks and isolates, zero-width characters, word joiner and
# invisible operators, BOM and Unicode tag characters (names.ts INVISIBLE says why).
INVISIBLE = "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def utf8_len(text):
    return len(text.encode("utf-8", "surrogatepass"))


def truncate_utf8(text, max_bytes):
    if utf8_len(text) <= max_bytes:
        return text
    kept, used = [], 0
    for char in text:
        used += utf8_len(char)
        if used > max_bytes:
            break
        kept.append(char)
    return "".join(kept)


def numbered_name(name, n):
    dot = name.rfind(".")
    has_ext = dot > 0 and utf8_len(name[dot:]) <= MAX_EXTENSION_BYTES
    stem = name[:dot] if has_ext else name
    tail = (" (%d)" % n if n > 0 else "") + (name[dot:] if has_ext else "")
    return (truncate_utf8(stem, MAX_NAME_BYTES - utf8_len(tail)) + tail).rstrip(JS_SPACE)


def clean_name(name, fallback):
    name = re.sub("[\ud800-\udfff]", "\ufffd", name)
    parts = [p.strip(JS_SPACE) for p in re.split(r"[/\\]", re.sub(INVISIBLE, "", name))]
    parts = [p for p in parts if p != ""]
    last = parts[-1] if parts else ""
    return fallback if re.match(r"^\.*$", last) else numbered_name(last, 0)


def name_problem(name):
    if name == "":
        return "must not be empty"
    if re.search(r"[/\\]", name):
        return "must not contain / or \\"
    if re.search(INVISIBLE, name):
        return "must not contain control, bidi-override or invisible characters"
    if name in (".", ".."):
        return 'must not be "." or ".."'
    if re.match(r"^\.+$", name):
        return "must not be dots only"
    if name.strip(JS_SPACE) != name:
        return "must not start or end with white space"
    if utf8_len(name) > MAX_NAME_BYTES:
        return "must be at most %d bytes" % MAX_NAME_BYTES
    return None


def pulled_name(name):
    return clean_name(name, "file").replace("[", "(").replace("]", ")")


SIZE_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def human_size(size):
    """The one unit rule (src/services/human-size.ts): 999 B, 1.5 KiB, 42 MiB, powers of 1024."""
    if size < 1024:
        return "%d B" % math.floor(size + 0.5)
    value = float(size)
    for i, unit in enumerate(SIZE_UNITS):
        value /= 1024
        tenths = math.floor(value * 10 + 0.5)
        if tenths < 100:
            return "%d.%d %s" % (tenths // 10, tenths % 10, unit)
        whole = math.floor(value + 0.5)
        if whole < 1024 or i == len(SIZE_UNITS) - 1:
            return "%d %s" % (whole, unit)


def parse_size(text):
    """A size people type (10M, 10 MiB, 10mb: all 10 MiB), as parseSize; None unless positive."""
    match = re.match(r"^([0-9]+) *(?:([kmgt])(?:i?b)?|b)?$", text.strip(), re.I)
    if not match:
        return None
    value = int(match.group(1)) * 1024 ** "_kmgt".find((match.group(2) or "_").lower())
    return value if 0 < value <= 2 ** 53 - 1 else None


def to_json(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# Arguments: strict, like Node's util.parseArgs.


