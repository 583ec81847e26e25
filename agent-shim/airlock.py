#!/usr/bin/env python3
# airlock.py: the Python shim of Airlock, for sandboxes with Python but no Node (or curl).
#
#   python3 -c "import urllib.request,sys; urllib.request.urlretrieve(sys.argv[1]+'/shim/airlock.py', '/usr/local/bin/airlock')" "$AIRLOCK_URL" && chmod +x /usr/local/bin/airlock
#
# Python 3.8 or newer, standard library only. The same commands, output lines, JSON fields and
# exit codes as the Node shim (/shim/airlock.mjs): send, get, pull, request, link, rm, ls, mcp (not
# tool-schema). Everything is streamed:
# memory stays flat whatever the size of a file.
import errno
import hashlib
import http.client
import json
import os
import random
import re
import socket
import stat
import sys
import threading
import time
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote, unquote, urlencode, urljoin, urlsplit

VERSION = "0.0.0-dev"  # set by scripts/build-shim.mjs when the relay serves this file

DEFAULT_ATTEMPTS = 5
DEFAULT_RETRY_BASE_MS = 250
RETRY_CAP_MS = 8000
DEFAULT_PULL_DIR = "uploads"  # under the working directory, unless --dir or AIRLOCK_INBOX_DIR
INBOX_DIR_VAR = "AIRLOCK_INBOX_DIR"
PULL_TIMEOUT_EXIT = 3
FIRST_POLL_S = 1.0
LAST_POLL_S = 4.0
GZIP_LEVEL = 1
DEFAULT_UPLOAD_CONCURRENCY = 4
SAMPLE_BYTES = 64 * 1024
MIN_GZIP_BYTES = 1024
MIN_GZIP_SAVING = 0.1
CHUNK = 1024 * 1024
IDLE_TIMEOUT_S = 60
MAX_TEXT_BYTES = 64 * 1024
# A relay's JSON answer: a multipart declaration on s3 carries a signed URL per part.
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_LINE = 1000
MAX_META_BYTES = 1024 * 1024
DEFAULT_MAX_EXTRACT_BYTES = 10 * 1024 ** 3
DEFAULT_MAX_EXTRACT_ENTRIES = 100000
STATE_MAX_AGE_MS = 2 * 86400000
WAIT_LIMIT_S = 30 * 60
MiB = 1024 * 1024
MIN_PART_BYTES = 8 * MiB
MAX_PARTS = 10000
MULTIPART_THRESHOLD_BYTES = 64 * MiB
SINGLE_UPLOAD_MAX_BYTES = MiB  # a file (or stdin) of at most this goes up in one request
STDIN = "-"
MAX_NAME_BYTES = 255
MAX_EXTENSION_BYTES = 32
ARCHIVE_TYPE = "application/gzip"
USER_AGENT = "airlock-shim/%s python/%d.%d.%d" % ((VERSION,) + tuple(sys.version_info[:3]))

USAGE = {
    "send": "airlock send <path|->... [--name <name>] [--to <platform:id>]... [--caption <text>] [--expires <duration>] [--max-downloads <n>] [--wait] [--json] [--media-tag]",
    "get": "airlock get <fileId|shareUrl> [-o <path>] [--extract] [--max-bytes <n>] [--max-entries <n>]",
    "pull": "airlock pull [--dir <dir>] [--wait] [--timeout <duration>] [--extract] [--max-bytes <n>] [--max-entries <n>] [--readonly] [--json]",
    "request": "airlock request [--name <hint>] [--max-bytes <n>] [--expires <duration>] [--json] | airlock request --cancel <requestId>",
    "link": "airlock link <fileId> [--expires <duration>] [--max-downloads <n>] [--json]",
    "rm": "airlock rm <fileId>",
    "ls": "airlock ls [--json]",
    "mcp": "airlock mcp",
    "global": "airlock <send|get|pull|request|link|rm|ls|mcp> ... | airlock <command> --help | airlock --help | airlock --version",
}

# Each command's help page, as the Node shim has it (in ASCII: "x" for a times sign, "..." for an
# ellipsis); the whole page is built from them too. A parity test holds the two shims' pages equal.
PAGES = {
    "send": {
        "about": """\
upload files (hashed, gzipped where it pays, deduplicated) and print each share URL;
a directory is sent as one <dir>.tar.gz (symlinks kept as links, modes and mtimes
kept); with --to, also deliver each file to those chats. Stored bytes over 64 MiB
go up in parts, several at once; a large send that failed or was killed resumes
when run again, sending only the parts the store does not hold yet. - sends standard
input, named by --name or else by its sniffed type (stdin.txt, stdin.png, stdin.bin)""",
        "options": """\
--name <name>        the name to send the file under, for - or one path only
--to <platform:id>   deliver to a chat: telegram:<chatId>, discord:<channelId>,
                     slack:<channelId> or whatsapp:<wa_id> (the person's number, digits
                     only); repeat for several (the session must allow each)
--caption <text>     caption for --to deliveries
--expires <duration> print a link minted to work this long (90s, 10m, 24h, 7d, 1h30m,
                     or seconds) instead of the default one; a link cannot outlive its
                     file
--max-downloads <n>  print a link that serves the file at most <n> times (counted in
                     bytes: n x its size), then refuses with 410
--wait               wait until the relay has verified each file (a large gzip or
                     multipart upload is "status":"pending" until then, and not yet a
                     dedup target); a file that fails the check fails the send
--json               one JSON object per file per line on stdout: fileId, name, size,
                     sha256, url, expiresAt (when the link stops working),
                     fileExpiresAt (when the file goes), status, deduped,
                     uploadedBytes, deliveries
--media-tag          print MEDIA:<url> instead of the bare URL (with --json: before
                     each JSON line), for gateways that route MEDIA: lines""",
        "example": "airlock send report.pdf --to telegram:12345 --caption 'This week'",
    },
    "get": {
        "about": """\
download a file by id or share URL, verifying its SHA-256, and print the path
written""",
        "options": """\
-o, --output <path>  where to write: a file, a directory, or - for stdout
                     (default: the file's name in the current directory, never
                     overwritten)
--extract            extract a .tar.gz into a new directory named after it (in
                     -o <dir>) instead of writing the archive; an archive with entries
                     that would escape that directory is refused whole, as is one with
                     an entry name that breaks the name rule (control, bidi or
                     invisible characters, \\, over 255 bytes: refused, not cleaned)
                     or pax or long-name headers over 1 MiB
--max-bytes <n>      with --extract: refuse an archive holding more than <n> bytes of
                     files (K, M, G, T: powers of 1024; default 10G); nothing of it is
                     kept
--max-entries <n>    with --extract: refuse an archive holding more than <n> entries
                     (files, directories, links; default 100000); nothing of it is
                     kept""",
        "example": "airlock get https://airlock.example.com/d/<token> -o data.csv",
    },
    "pull": {
        "about": """\
write the files people sent to this sandbox into a directory, verified, never
overwriting (report.pdf, then "report (1).pdf"), and print a line per file:
[User uploaded: <name> (<size>) at <path>], <path> being exactly where it was
written. Names are cleaned first (last path component, no control, bidi or
invisible characters, never empty or dots, at most 255 bytes) and [ ] in a name become
( ), so a line's only "]" is its last character. A file that cannot be pulled is
named on stderr (item id and name), stays in the inbox, and pull goes on with
the others, then exits 1. With nothing waiting, it says so on stderr and exits 0
at once, unless --wait""",
        "options": """\
--dir <dir>          where to write (default: $AIRLOCK_INBOX_DIR when it is set,
                     else uploads/ in the current directory; created if missing)
--wait               when nothing is waiting, wait until something arrives (asking the
                     relay every second or so, then every few seconds), then pull it
--timeout <duration> with --wait: give up after this long (90s, 10m, 1h, 1h30m, or
                     seconds), with one line on stderr and exit status 3
--extract            extract a .tar.gz into a new directory named after it (in the
                     directory above) instead of writing the archive; an archive with
                     entries that would escape that directory, or with a name that
                     breaks the name rule, is refused whole and stays in the inbox
--max-bytes <n>      with --extract: refuse an archive holding more than <n> bytes of
                     files (K, M, G, T: powers of 1024; default 10G)
--max-entries <n>    with --extract: refuse an archive holding more than <n> entries
                     (files, directories, links; default 100000)
--readonly           leave each file written read-only (mode 0444; with --extract,
                     every file in the extracted directory), e.g. configuration the
                     agent must not change
--json               one JSON object per file per line on stdout: itemId, fileId,
                     name, size, sha256, path, source""",
        "example": "airlock pull --wait --timeout 10m",
    },
    "request": {
        "about": """\
ask a person for a file: print an upload link (.../u/<token>) to show them in any
chat or terminal. They open it in a browser (or run curl -T <file> <link>); the
file arrives in this sandbox's inbox, for pull. The link takes one file""",
        "options": """\
--name <hint>        the file name suggested to the person
--max-bytes <n>      the largest file the link takes (K, M, G, T: powers of 1024;
                     default: the relay's limit)
--expires <duration> how long the link takes an upload (90s, 10m, 24h, 7d; default:
                     the relay's link lifetime, never past the session's end)
--json               print { requestId, url, name, maxBytes, expiresAt } instead of
                     the URL
--cancel <requestId> take a link back: it stops working at once, and an upload under
                     way through it is given up (nothing of it is kept)""",
        "example": "airlock request --name invoice.pdf --expires 1d",
    },
    "link": {
        "about": """\
print a fresh share link to one of this session's files, with an expiry and a
download limit of its own; the file's other links are not changed""",
        "options": """\
--expires <duration> how long the link works (90s, 10m, 24h, 7d, 1h30m, or seconds;
                     default: the relay's link lifetime, cut at the file's expiry); a
                     link cannot outlive its file
--max-downloads <n>  serve the file at most <n> times through this link (counted in
                     bytes: n x its size), then refuse with 410
--json               print { fileId, url, expiresAt, maxDownloads } instead of the URL
                     (maxDownloads is null when unlimited)""",
        "example": "airlock link fil_0123456789abcdefghijkl --expires 2h --max-downloads 1",
    },
    "rm": {
        "about": """\
delete one of this session's files and print "deleted <fileId>": it leaves ls and
the session's quota at once, and every share link of it stops working (410)""",
        "options": "",
        "example": "airlock rm fil_0123456789abcdefghijkl",
    },
    "ls": {
        "about": """\
list this session's files, newest first: id, size, the file's expiry, name""",
        "options": """\
--json               one file record per line on stdout, as the relay gives it""",
        "example": "airlock ls --json",
    },
    "mcp": {
        "about": """\
serve the tools of tool-schema --format mcp (send_file, receive_files,
request_file, share_link, list_files, remove_file) over MCP on stdin and stdout,
for an agent host to start (claude mcp add airlock -- airlock mcp); nothing but
protocol messages on stdout. receive_files writes as pull does, read-only when
AIRLOCK_READONLY=1. Runs until stdin closes""",
        "options": "",
        "example": "docker exec -i <sandbox> airlock mcp",
    },
}

HELP_OPTION = "-h, --help           show this help"


def indent(text, by):
    return "\n".join(by + line if line else line for line in text.split("\n"))


def option_lines(page):
    return indent(page["options"] + "\n" + HELP_OPTION if page["options"] else HELP_OPTION, "  ")


def command_help(name):
    """`airlock <command> --help`: that command's usage line, what it does, its options, an example."""
    page = PAGES[name]
    return "Usage\n  %s\n\n%s\n\nOptions\n%s\n\nExample\n  %s\n\nEvery command, the environment and exit statuses: airlock --help" % (
        USAGE[name],
        indent(page["about"], "  "),
        option_lines(page),
        page["example"],
    )


def command_summary(name):
    lines = indent(PAGES[name]["about"], " " * 10).split("\n")
    head = "  %s%s" % (name.ljust(8), lines[0].lstrip()) if len(name) < 8 else "  %s\n%s" % (name, lines[0])
    return "\n".join([head] + lines[1:])


HELP = """airlock: move files between this sandbox and people, through an Airlock relay
(the Python shim: the Node shim's commands but tool-schema)

Usage
%(usages)s
  airlock <command> --help | airlock --help | airlock --version

Commands
%(summaries)s

%(options)s

Global options
  %(help_option)s (airlock <command> --help: that command's alone)
  -v, --version        show the version

Environment
  AIRLOCK_URL            the relay's base URL, e.g. https://airlock.example.com
  AIRLOCK_TOKEN          this sandbox's session token
  %(inbox_var)s where pull writes without --dir (default: ./%(dir)s)
  AIRLOCK_READONLY       1: mcp's receive_files leaves each file read-only (pull --readonly)
  AIRLOCK_RETRIES        attempts per request before giving up (default 5)
  AIRLOCK_RETRY_BASE_MS  first retry delay in milliseconds, doubled each time (default 250)
  AIRLOCK_GZIP_LEVEL     gzip level 1-9 used when compressing pays (default 1)
  AIRLOCK_UPLOAD_CONCURRENCY
                         parts of a large upload in flight at once, 1-16 (default 4)
  AIRLOCK_MULTIPART_THRESHOLD
                         stored bytes above which a send goes in parts (default 64 MiB,
                         at least 8 MiB)

Exit status: 0 success, 1 failure (a failed delivery or pulled file included: the
others still go through), 2 usage or configuration error, %(timeout_exit)d pull --wait --timeout
ran out with nothing arriving.""" % {
    "usages": "\n".join("  " + USAGE[name] for name in PAGES),
    "summaries": "\n".join(command_summary(name) for name in PAGES),
    "options": "\n\n".join(
        "Options of %s\n%s" % (name, indent(page["options"], "  ")) for name, page in PAGES.items() if page["options"]
    ),
    "help_option": HELP_OPTION,
    "inbox_var": INBOX_DIR_VAR.ljust(22),
    "dir": DEFAULT_PULL_DIR,
    "timeout_exit": PULL_TIMEOUT_EXIT,
}


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


def human_size(size):
    if size < 1000:
        return "%d B" % int(size + 0.5)
    value, unit = float(size), "B"
    for nxt in ("KB", "MB", "GB", "TB"):
        if value < 1000:
            break
        value /= 1000
        unit = nxt
    return ("%.1f" % value if value < 10 else "%d" % int(value + 0.5)) + " " + unit


def to_json(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# Arguments: strict, like Node's util.parseArgs.


def parse_args(args, spec, usage):
    """spec: long name -> (takes value, short letter or None, multiple). Returns (values, positionals)."""
    shorts = dict((s[1], name) for name, s in spec.items() if s[1])
    values, positionals = {}, []
    i = 0

    def bad(message):
        raise UsageError("%s; usage: %s" % (message, usage))

    def store(name, value):
        if spec[name][2]:
            values.setdefault(name, []).append(value)
        else:
            values[name] = value

    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            positionals.extend(args[i:])
            break
        if arg.startswith("--"):
            name, eq, inline = arg[2:].partition("=")
            if name not in spec:
                bad("unknown option '--%s'" % name)
            takes = spec[name][0]
            shown = "-%s, --%s" % (spec[name][1], name) if spec[name][1] else "--" + name
            if not takes:
                if eq:
                    bad("option '%s' does not take an argument" % shown)
                store(name, True)
            elif eq:
                store(name, inline)
            else:
                if i >= len(args) or (args[i].startswith("-") and args[i] != "-"):
                    bad("option '%s <value>' argument missing" % shown)
                store(name, args[i])
                i += 1
        elif arg.startswith("-") and arg != "-":
            letters = arg[1:]
            while letters:
                letter, letters = letters[0], letters[1:]
                if letter not in shorts:
                    bad("unknown option '-%s'" % letter)
                name = shorts[letter]
                shown = "-%s, --%s" % (letter, name)
                if not spec[name][0]:
                    store(name, True)
                    continue
                if letters:
                    store(name, letters)
                elif i >= len(args) or (args[i].startswith("-") and args[i] != "-"):
                    bad("option '%s <value>' argument missing" % shown)
                else:
                    store(name, args[i])
                    i += 1
                break
        else:
            positionals.append(arg)
    return values, positionals


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text, what, usage):
    """Seconds in `90s`, `10m`, `24h`, `7d`, `2w`, a sum such as `1h30m`, or bare seconds."""
    trimmed = text.strip().lower()
    if re.match(r"^\d+$", trimmed):
        seconds = int(trimmed)
    elif re.match(r"^(\d+[smhdw])+$", trimmed):
        seconds = sum(int(n) * DURATION_UNITS[u] for n, u in re.findall(r"(\d+)([smhdw])", trimmed))
    else:
        raise UsageError("%s %s is not a duration such as 90s, 10m, 24h or 7d; usage: %s" % (what, text, usage))
    if seconds <= 0 or seconds > 2 ** 53 - 1:
        raise UsageError("%s must be longer than 0 seconds; usage: %s" % (what, usage))
    return seconds


def integer_var(name, fallback, low, high):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return fallback
    try:
        value = float(raw)
    except ValueError:
        value = None
    if value is None or value != int(value) or value < low or value > high:
        raise UsageError("%s must be an integer from %d to %d, not %s" % (name, low, high, raw))
    return int(value)


def relay_config():
    raw = os.environ.get("AIRLOCK_URL", "").strip()
    if not raw:
        raise UsageError("AIRLOCK_URL is not set; set it to the relay's base URL")
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 (a bad port raises)
    except ValueError:
        raise UsageError("AIRLOCK_URL is not a valid URL: " + raw)
    if parts.scheme not in ("http", "https"):
        if not parts.scheme or not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", raw):
            raise UsageError("AIRLOCK_URL is not a valid URL: " + raw)
        raise UsageError("AIRLOCK_URL must be an http(s) URL: " + raw)
    if not parts.netloc:
        raise UsageError("AIRLOCK_URL is not a valid URL: " + raw)
    token = os.environ.get("AIRLOCK_TOKEN", "").strip()
    if not token:
        raise UsageError("AIRLOCK_TOKEN is not set; set it to this sandbox's session token")
    return raw.rstrip("/"), token


class Policy(object):
    def __init__(self):
        self.attempts = integer_var("AIRLOCK_RETRIES", DEFAULT_ATTEMPTS, 1, 100)
        self.base_ms = integer_var("AIRLOCK_RETRY_BASE_MS", DEFAULT_RETRY_BASE_MS, 0, 60000)


def extract_limits(values, usage):
    """--max-bytes and --max-entries of get and pull: (bytes, entries), with their defaults."""
    option = values.get("max-entries")
    entries = DEFAULT_MAX_EXTRACT_ENTRIES
    if option is not None:
        entries = int(option.strip()) if re.match(r"^\d+$", option.strip()) else 0
        if entries <= 0 or entries > 2 ** 53 - 1:
            raise UsageError(
                "--max-entries needs a positive whole number (e.g. 500000), not %s; usage: %s"
                % (to_json(option), usage)
            )
    return max_extract_bytes(values.get("max-bytes"), usage), entries


def check_extract_flags(values, usage):
    for flag in ("max-bytes", "max-entries"):
        if values.get(flag) is not None and not values.get("extract"):
            raise UsageError("--%s limits --extract; usage: %s" % (flag, usage))


def max_extract_bytes(option, usage):
    if option is None:
        return DEFAULT_MAX_EXTRACT_BYTES
    units = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}
    match = re.match(r"^(\d+)\s*([kmgt]?)(?:i?b)?$", option.strip(), re.I)
    value = int(match.group(1)) * units[match.group(2).lower()] if match else 0
    if value <= 0 or value > 2 ** 53 - 1:
        raise UsageError(
            "--max-bytes needs a positive number of bytes (e.g. 500M, 20G), not %s; usage: %s"
            % (to_json(option), usage)
        )
    return value


# ---------------------------------------------------------------------------------------------
# HTTP, with retries.


def with_retry(policy, target, attempt, stop=None):
    """Runs attempt() until it succeeds, retrying transient failures with full-jitter backoff."""
    tries = 0
    while True:
        tries += 1
        if stop is not None and stop.is_set():
            raise CliError("stopped")
        try:
            return attempt()
        except (NetworkError, RetryableStatus) as err:
            mcp_check_cancelled()
            transient = isinstance(err, RetryableStatus) or err.transient
            if not transient or tries >= policy.attempts:
                after = " (after %d attempt%s)" % (tries, "" if tries == 1 else "s") if transient else ""
                if isinstance(err, NetworkError):
                    raise UnavailableError(
                        "cannot reach %s at %s: %s%s" % (target[0], target[1], err.reason, after)
                    )
                raise UnavailableError(
                    "%s error during %s: %s%s" % (target[0], target[2], err.detail, after)
                )
            delay = getattr(err, "retry_after", None)
            if delay is None:
                delay = random.random() * min(RETRY_CAP_MS, policy.base_ms * 2 ** (tries - 1)) / 1000
            time.sleep(delay)


def open_request(method, url, headers, body=None, length=None):
    """Sends a request and returns (connection, response) once the head arrives. `body` is
    bytes, or an iterable of byte chunks whose total `length` is given."""
    parts = urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    mcp_check_cancelled()
    conn = cls(parts.hostname, parts.port, timeout=IDLE_TIMEOUT_S)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    try:
        if MCP_CALL is not None:
            MCP_CALL.watch(conn, method)
        conn.putrequest(method, path, skip_accept_encoding=True)
        sent = dict((k.lower(), v) for k, v in headers.items())
        sent.setdefault("user-agent", USER_AGENT)
        if isinstance(body, bytes):
            sent["content-length"] = str(len(body))
        elif body is not None:
            sent["content-length"] = str(length)
        for key, value in sent.items():
            conn.putheader(key, value)
        conn.endheaders()
        if isinstance(body, bytes):
            conn.send(body)
        elif body is not None:
            for chunk in body:
                conn.send(chunk)
        return conn, conn.getresponse()
    except (CliError, NetworkError):
        conn.close()
        raise
    except (OSError, http.client.HTTPException) as err:
        conn.close()
        raise network_error(err)


def read_text(res, max_bytes=MAX_TEXT_BYTES):
    kept = []
    size = 0
    try:
        while True:
            chunk = res.read(CHUNK)
            if not chunk:
                break
            if size < max_bytes:
                kept.append(chunk)
                size += len(chunk)
    except (OSError, http.client.HTTPException) as err:
        raise network_error(err)
    return b"".join(kept)[:max_bytes].decode("utf-8", "replace")


def error_body(text):
    try:
        parsed = json.loads(text)
        err = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(err, dict) and isinstance(err.get("code"), str):
            body = {"code": err["code"]}
            if isinstance(err.get("message"), str):
                body["message"] = err["message"]
            return body
    except ValueError:
        pass
    code = re.search(r"<Code>([^<]*)</Code>", text)
    message = re.search(r"<Message>([^<]*)</Message>", text)
    if code and code.group(1):
        return {"code": code.group(1), "message": message.group(1) if message else None}
    return {}


def is_retryable_status(status):
    return status == 429 or status >= 500


def status_error(res, text, refused, retryable=None):
    status = res.status
    body = error_body(text)
    if body.get("code"):
        detail = "%s: %s" % (body["code"], body["message"]) if body.get("message") else body["code"]
    else:
        detail = ("HTTP %d %s" % (status, http.client.responses.get(status, ""))).strip()
    ok = retryable(status, body.get("code")) if retryable else is_retryable_status(status)
    if ok:
        after = res.getheader("retry-after")
        try:
            delay = float(after) if after is not None else None
        except ValueError:
            delay = None
        return RetryableStatus(status, detail, delay if delay is not None and delay >= 0 else None)
    return RefusalError("%s: %s" % (refused, detail), status, detail, body)


FINAL_CODES = ("delivery_failed", "platform_unreachable", "platform_not_configured")


def relay_retryable(status, code):
    if code in FINAL_CODES:
        return False
    if code == "delivery_in_progress":
        return True
    return is_retryable_status(status)


def storage_retryable(status, code):
    return is_retryable_status(status) or code == "RequestTimeout"


class Relay(object):
    def __init__(self, policy):
        self.url, self.token = relay_config()
        self.policy = policy

    def call(self, method, path, action, payload=None, idempotency_key=None):
        headers = {"authorization": "Bearer " + self.token, "accept": "application/json"}
        if idempotency_key:
            headers["idempotency-key"] = idempotency_key
        body = None
        if method != "GET":
            body = b"" if payload is None else to_json(payload).encode("utf-8")
            if payload is not None:
                headers["content-type"] = "application/json"

        return self.exchange(method, self.url + path, headers, body, action)

    def exchange(self, method, url, headers, body, action):
        """One request to the relay, retried per the policy: its JSON answer."""

        def attempt():
            conn, res = open_request(method, url, headers, body)
            try:
                text = read_text(res, MAX_JSON_BYTES)
            finally:
                conn.close()
            if 200 <= res.status < 300:
                try:
                    return json.loads(text)
                except ValueError:
                    raise CliError("relay answered the %s with something other than JSON" % action)
            raise status_error(res, text, "relay refused " + action, relay_retryable)

        return with_retry(self.policy, ("relay", self.url, action), attempt)

    def single_upload(self, declaration, stored):
        """`POST /v1/single-uploads`: declares, stores, verifies and registers a small file in
        one request (the declaration in the query, the stored bytes as the body). Every attempt
        carries the same Idempotency-Key, so a retry after a lost answer gets the file the first
        attempt made. None when the relay has no such route (an older relay): the caller
        declares and PUTs instead."""
        fields = ("name", "size", "sha256", "contentType", "encoding", "storedSha256")
        pairs = [(k, str(declaration[k])) for k in fields]
        members = declaration.get("members")
        if members:
            pairs.append(("memberSpan", str(members["span"])))
            pairs.append(("memberSizes", ",".join(str(n) for n in members["storedSizes"])))
        query = urlencode(pairs, quote_via=quote)
        headers = {
            "authorization": "Bearer " + self.token,
            "accept": "application/json",
            "content-type": "application/octet-stream",
            "idempotency-key": str(uuid.uuid4()),
        }
        action = "upload of " + declaration["name"]
        try:
            record = self.exchange("POST", self.url + "/v1/single-uploads?" + query, headers, stored, action)
        except RefusalError as err:
            if err.status == 404 and err.body.get("code") == "not_found":
                return None
            raise
        if not isinstance(record, dict):
            raise CliError("relay gave an unexpected answer to the " + action)
        return record

    def declare(self, declaration):
        action = "upload of " + declaration["name"]
        answer = self.call("POST", "/v1/uploads", action, declaration)
        if not isinstance(answer, dict) or answer.get("status") not in ("deduped", "missing", "upload", "multipart"):
            raise CliError("relay gave an unexpected answer to the " + action)
        return answer

    def upload_state(self, upload_id, name):
        action = "lookup of the upload of " + name
        answer = self.call("GET", "/v1/uploads/" + quote(upload_id, safe=""), action)
        if not isinstance(answer, dict) or answer.get("status") not in ("upload", "multipart", "completed"):
            raise CliError("relay gave an unexpected answer to the " + action)
        return answer

    def complete(self, upload_id, name):
        return self.call("POST", "/v1/uploads/%s/complete" % quote(upload_id, safe=""), "completing the upload of " + name)

    def get_file(self, file_id):
        return self.call("GET", "/v1/files/" + quote(file_id, safe=""), "lookup of file " + file_id)

    def content_url(self, file_id):
        return "%s/v1/files/%s/content" % (self.url, quote(file_id, safe=""))

    def auth(self):
        return {"authorization": "Bearer " + self.token}


# ---------------------------------------------------------------------------------------------
# Reading a file: type sniffing, gzip where it pays, hashes and part digests.


def _at(offset, sig):
    sig = sig.encode("latin-1") if isinstance(sig, str) else bytes(sig)
    return lambda s: s[offset : offset + len(sig)] == sig


def _mpeg(s):
    return len(s) >= 2 and s[0] == 0xFF and (s[1] & 0xE0) == 0xE0 and (s[1] & 0x06) != 0


def _id3(s):
    return s[:3] == b"ID3" and len(s) > 3 and 2 <= s[3] <= 4


FORMATS = [
    ("image/png", True, _at(0, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])),
    ("image/jpeg", True, _at(0, [0xFF, 0xD8, 0xFF])),
    ("image/gif", True, lambda s: s[:6] in (b"GIF87a", b"GIF89a")),
    ("image/webp", True, lambda s: s[:4] == b"RIFF" and s[8:12] == b"WEBP"),
    ("audio/wav", False, lambda s: s[:4] == b"RIFF" and s[8:12] == b"WAVE"),
    ("application/pdf", False, _at(0, "%PDF-")),
    ("application/zip", True, lambda s: s[:4] in (b"PK\x03\x04", b"PK\x05\x06")),
    ("application/gzip", True, _at(0, [0x1F, 0x8B])),
    ("video/quicktime", True, lambda s: s[4:8] == b"ftyp" and s[8:12] == b"qt  "),
    ("video/mp4", True, _at(4, "ftyp")),
    ("video/webm", True, lambda s: s[:4] == b"\x1a\x45\xdf\xa3" and b"webm" in s[:64]),
    ("video/x-matroska", True, _at(0, [0x1A, 0x45, 0xDF, 0xA3])),
    ("audio/ogg", True, _at(0, "OggS")),
    ("audio/flac", True, _at(0, "fLaC")),
    ("audio/mpeg", True, lambda s: _id3(s) or _mpeg(s)),
    ("application/zstd", True, _at(0, [0x28, 0xB5, 0x2F, 0xFD])),
    ("application/x-xz", True, _at(0, [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00])),
    ("application/x-bzip2", True, lambda s: s[:3] == b"BZh" and len(s) > 3 and 0x31 <= s[3] <= 0x39),
    ("application/x-7z-compressed", True, _at(0, [0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C])),
]


def sniff(sample, truncated):
    for kind, compressed, matches in FORMATS:
        if matches(sample):
            return kind, compressed
    if b"\x00" not in sample:
        try:
            import codecs

            codecs.getincrementaldecoder("utf-8")("strict").decode(sample, final=not truncated)
            return "text/plain; charset=utf-8", False
        except UnicodeDecodeError:
            pass
    return "application/octet-stream", False


def mtime_ms(info):
    ns = info.st_mtime_ns
    value = (ns // 10 ** 9) * 1e3 + (ns % 10 ** 9) / 1e6
    return int(value) if value == int(value) else value


def max_stored_size(size):
    return size + -(-size // 1000) + 1024


def part_size_for(size):
    return max(MIN_PART_BYTES, -(-max_stored_size(size) // MAX_PARTS // MiB) * MiB)


def part_count(stored_size, part_size):
    return max(1, -(-stored_size // part_size))


def multipart_threshold():
    """Stored bytes above which a send goes up in parts: AIRLOCK_MULTIPART_THRESHOLD, at least
    one smallest part, else 64 MiB (as the Node shim)."""
    raw = os.environ.get("AIRLOCK_MULTIPART_THRESHOLD", "").strip()
    return max(MIN_PART_BYTES, int(raw)) if raw.isdigit() else MULTIPART_THRESHOLD_BYTES


def digest_part_size(size, may_grow):
    largest = max_stored_size(size) if may_grow else size
    return part_size_for(size) if largest > multipart_threshold() else None


class Digests(object):
    """SHA-256 and size of a byte stream, and optionally the SHA-256 of each part of it."""

    def __init__(self, part_size=None, whole=True):
        self.hash = hashlib.sha256() if whole else None
        self.size = 0
        self.part_size = part_size
        self.parts = []
        self.part = hashlib.sha256() if part_size else None
        self.filled = 0

    def update(self, chunk):
        if self.hash is not None:
            self.hash.update(chunk)
        self.size += len(chunk)
        if not self.part_size:
            return
        view = memoryview(chunk)
        while len(view):
            take = min(self.part_size - self.filled, len(view))
            self.part.update(view[:take])
            self.filled += take
            view = view[take:]
            if self.filled == self.part_size:
                self._cut()

    def _cut(self):
        self.parts.append(self.part.hexdigest())
        self.part = hashlib.sha256()
        self.filled = 0

    def finish_parts(self):
        if self.part_size is None:
            return None
        if self.filled > 0 or not self.parts:
            self._cut()
        return self.parts


def file_part_digests(path, part_size, abandon):
    """The SHA-256 of each part of a file, in a pass of its own: run in a thread beside the
    whole-file hash (hashlib lets go of the GIL), the two cost one hash's time on two cores."""
    digests = Digests(part_size, whole=False)
    for chunk in read_chunks(path):
        if abandon.is_set():
            raise CliError("abandoned")
        digests.update(chunk)
    return digests.finish_parts()


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
    try:
        size = os.stat(path).st_size
        span = member_span_for(size)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as sink:
            spans = spans_of(read_chunks(path, span=span), span)
            known_large = size > POOL_AFTER_MEMBERS * span
            for member in gzip_members(spans, level, sizes, known_large, threads):
                if abandon.is_set():
                    raise CliError("abandoned")
                digests.update(member)
                sink.write(member)
    except OSError as err:
        release(temp)
        raise fs_error("write temp file", temp, err)
    except BaseException:
        release(temp)
        raise
    table = member_table(span, sizes)
    return Stored("gzip", temp, digests.size, digests.hash.hexdigest(), digests.finish_parts(), True, table)


def changed_while_sending(path):
    return CliError("%s changed while it was being sent; send it again once it is complete" % path)


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


def put_slice(put, path, start, length, sha256, label, which, policy, stop=None):
    """PUTs `length` bytes of a file from `start`, checked against their digest on the way."""
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
            if state["bytes"] != length or digest.hexdigest() != sha256:
                raise changed_while_sending(label)

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


class UploadStates(object):
    """Multipart uploads in progress, one small JSON file each in <cache>/airlock/uploads/."""

    def __init__(self):
        self.dir = os.path.join(cache_dir(), "uploads")

    def file_for(self, key):
        ident = to_json([key["relayUrl"], key["path"], key["size"], key["mtimeMs"]])
        return os.path.join(self.dir, hashlib.sha256(ident.encode("utf-8")).hexdigest()[:32] + ".json")

    def load(self, key):
        try:
            with open(self.file_for(key), "rb") as handle:
                saved = json.loads(handle.read(1024 * 1024).decode("utf-8"))
            created = parse_iso(saved.get("createdAt"))
        except (OSError, ValueError, AttributeError):
            return None
        age = time.time() * 1000 - created if created is not None else -1
        same = all(saved.get(k) == key[k] for k in ("relayUrl", "path", "size", "mtimeMs"))
        if same and isinstance(saved.get("uploadId"), str) and 0 <= age < STATE_MAX_AGE_MS:
            return saved
        self.remove(key)
        return None

    def save(self, upload):
        try:
            os.makedirs(self.dir, 0o700, exist_ok=True)
            temp = temp_path(self.dir, ".state-", ".json")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(to_json(upload).encode("utf-8"))
            os.rename(temp, self.file_for(upload))
            TEMPS.discard(temp)
        except OSError:
            return

    def remove(self, key):
        try:
            os.unlink(self.file_for(key))
        except OSError:
            pass


def parse_iso(text):
    import calendar

    match = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z$", str(text))
    if not match:
        return None
    fields = [int(x) for x in match.groups()[:6]]
    frac = float("0." + match.group(7)) if match.group(7) else 0.0
    return (calendar.timegm(tuple(fields) + (0, 0, 0)) + frac) * 1000


def now_iso():
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % int(now % 1 * 1000)


class Sender(object):
    """How every file of one `send` goes up."""

    def __init__(self, relay, policy):
        self.relay = relay
        self.policy = policy
        self.concurrency = integer_var("AIRLOCK_UPLOAD_CONCURRENCY", DEFAULT_UPLOAD_CONCURRENCY, 1, 16)
        self.level = integer_var("AIRLOCK_GZIP_LEVEL", GZIP_LEVEL, 1, 9)
        self.states = UploadStates()

    def send_in_one_request(self, declaration, data):
        """Bytes held in memory, in one request: the send's result, or None when the relay has
        no one-request route. A dedup hit within the owner scope leaves the body unread."""
        record = self.relay.single_upload(declaration, data)
        if record is None:
            return None
        deduped = bool(record.get("deduped"))
        return result_of(record, deduped, 0 if deduped else declaration["storedSize"])

    def send_stored(self, declaration, stored, source):
        """Declares the stored form, stores the bytes and completes: (file, deduped, uploaded)."""
        if stored.members and declaration.get("encoding") == "gzip":
            declaration = dict(declaration, members=stored.members)
        if declaration["storedSize"] > multipart_threshold():
            return self.send_in_parts(declaration, stored, source)
        answer = self.relay.declare(declaration)
        if answer["status"] == "deduped":
            return answer["file"], True, 0
        return self.send_whole(declaration, stored, answer)

    def send_whole(self, declaration, stored, answer):
        name = declaration["name"]
        if answer["status"] == "missing":
            raise CliError("relay asked again how %s is stored" % name)
        if answer["status"] != "upload":
            raise CliError("relay gave an unexpected answer to the upload of " + name)
        put_slice(answer["put"], stored.path, 0, stored.size, stored.sha256, name, name, self.policy)
        return self.relay.complete(answer["uploadId"], name), False, stored.size

    def send_in_parts(self, declaration, stored, source):
        name, size, stored_size = declaration["name"], declaration["size"], declaration["storedSize"]
        part_size = part_size_for(size)
        digests = stored.parts
        if digests is None or len(digests) != part_count(stored_size, part_size):
            parts = Digests(part_size)
            for chunk in read_chunks(stored.path):
                parts.update(chunk)
            digests = parts.finish_parts()
        # Standard input (no source) cannot be read again by a later run: its upload is not saved.
        key = None
        if source is not None:
            key = {"relayUrl": self.relay.url, "path": os.path.abspath(source[0]), "size": size, "mtimeMs": source[1]}
        form = dict((k, declaration[k]) for k in ("sha256", "encoding", "storedSize", "storedSha256"))
        upload = self.resumable(key, form, part_size, name) if key is not None else None
        if upload is not None and upload["status"] == "completed":
            self.states.remove(key)
            return upload["file"], False, 0
        if upload is None:
            asked = dict(declaration)
            asked["partSha256"] = digests
            answer = self.relay.declare(asked)
            if answer["status"] == "deduped":
                return answer["file"], True, 0
            if answer["status"] != "multipart":
                return self.send_whole(declaration, stored, answer)
            upload = answer
            if key is not None:
                saved = dict(key)
                saved.update(form)
                saved.update({"partSize": part_size, "uploadId": upload["uploadId"], "createdAt": now_iso()})
                self.states.save(saved)
        upload_id = upload["uploadId"]
        uploaded = self.put_parts(upload, stored, part_size, digests, name)
        try:
            record = self.relay.complete(upload_id, name)
        except RefusalError as err:
            if err.body.get("code") != "upload_incomplete":
                raise
            now = self.relay.upload_state(upload_id, name)
            if now["status"] == "completed":
                record = now["file"]
            elif now["status"] == "multipart":
                uploaded += self.put_parts(now, stored, part_size, digests, name)
                record = self.relay.complete(upload_id, name)
            else:
                raise
        if key is not None:
            self.states.remove(key)
        return record, False, uploaded

    def resumable(self, key, form, part_size, name):
        saved = self.states.load(key)
        if saved is None:
            return None
        same = all(saved.get(k) == v for k, v in form.items()) and saved.get("partSize") == part_size
        if same:
            try:
                state = self.relay.upload_state(saved["uploadId"], name)
                if state["status"] == "completed":
                    return state
                if state["status"] == "multipart" and state.get("uploadId") == saved["uploadId"]:
                    return state
            except RefusalError:
                pass
        self.states.remove(key)
        return None

    def put_parts(self, upload, stored, part_size, digests, label):
        count = len(digests)
        mismatch = CliError("relay planned the parts of %s differently than airlock did" % label)
        if upload.get("partSize") != part_size or upload.get("partCount") != count:
            raise mismatch
        seen = set()
        for part in upload.get("parts") or []:
            number = part.get("partNumber")
            valid = isinstance(number, int) and 1 <= number <= count
            if not valid or number in seen or not isinstance((part.get("put") or {}).get("url"), str):
                raise mismatch
            seen.add(number)
        missing = sorted(upload.get("parts") or [], key=lambda p: p["partNumber"])
        stop = threading.Event()
        failure = []
        lock = threading.Lock()
        done = [0]

        def one(part):
            if stop.is_set():
                return
            number = part["partNumber"]
            start = (number - 1) * part_size
            length = min(part_size, stored.size - start)
            which = "%s (part %d of %d)" % (label, number, count)
            try:
                put_slice(part["put"], stored.path, start, length, digests[number - 1], label, which, self.policy, stop)
                with lock:
                    done[0] += length
            except BaseException as err:
                with lock:
                    if not stop.is_set():
                        failure.append(err)
                        stop.set()

        if missing:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(missing))) as pool:
                list(pool.map(one, missing))
        if failure:
            raise failure[0]
        return done[0]


# ---------------------------------------------------------------------------------------------
# send


DESTINATION = re.compile(r"^(telegram:-?\d+|discord:\d+|slack:[A-Z0-9]+|whatsapp:\d+)$")
DESTINATION_SHAPES = "telegram:<chatId>, discord:<channelId>, slack:<channelId> or whatsapp:<wa_id>"


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
    pays = gzip_pays(size, sample, compressed, sender.level)
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
        if probe["status"] == "deduped":
            return result_of(probe["file"], True, 0)
        if probe["status"] in ("upload", "multipart"):
            raise CliError("relay asked to upload %s before knowing how it is stored" % name)
        if pays:
            stored = gzipping[0].result()
        else:
            part_sha256 = parts.result() if parts else None
            stored = Stored("identity", path, digests.size, sha256, part_sha256, False)
        try:
            now = os.stat(path)
        except OSError:
            now = None
        if digests.size != size or now is None or now.st_size != size or mtime_ms(now) != mtime:
            raise changed_while_sending(path)
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

    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as sink:
            # Its length unknown, the input gets the usual span, and a pool once it proves long.
            out = gzip_members(spans_of(chunks(), MEMBER_SPAN), level, sizes, False) if gzip else chunks()
            for data in out:
                stored.update(data)
                sink.write(data)
    except OSError as err:
        release(temp)
        raise fs_error("write temp file", temp, err)
    except BaseException:
        release(temp)
        raise
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
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as sink:
            sink.write(data)
    except OSError as err:
        release(temp)
        raise fs_error("write temp file", temp, err)
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


def archive_directory(path, level):
    """Packs a directory into <dir>.tar.gz in the temp directory, streaming; sorted, so the same
    tree always makes the same bytes. Returns (Stored, regular files in it)."""
    top = clean_name(os.path.basename(os.path.abspath(path)), "archive")
    temp = temp_path(tmpdir(), "airlock-", ".tar.gz")
    digests = Digests(None)
    count = [0]
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as sink:
            z = zlib.compressobj(level, zlib.DEFLATED, 31)
            held = []

            def emit(data, force=False):
                held.append(data)
                if force or sum(len(x) for x in held) >= 64 * 1024:
                    packed = z.compress(b"".join(held))
                    del held[:]
                    if packed:
                        digests.update(packed)
                        sink.write(packed)

            try:
                info = os.stat(path)
            except OSError as err:
                raise fs_error("read", path, err)
            emit(encode_header(top, "directory", info.st_mode, info.st_mtime))
            walk(path, top, emit, count)
            emit(b"\x00" * (2 * BLOCK), True)
            tail = z.flush()
            digests.update(tail)
            sink.write(tail)
    except OSError as err:
        release(temp)
        raise fs_error("write temp file", temp, err)
    except BaseException:
        release(temp)
        raise
    return Stored("identity", temp, digests.size, digests.hash.hexdigest(), None, True), count[0]


def walk(directory, prefix, emit, count):
    try:
        names = os.listdir(directory)
    except OSError as err:
        raise fs_error("read", directory, err)
    for name in sorted(names, key=lambda n: os.fsencode(n)):
        path = os.path.join(directory, name)
        entry = prefix + "/" + name
        try:
            info = os.lstat(path)
        except OSError as err:
            raise fs_error("read", path, err)
        mode, mtime = info.st_mode, int(info.st_mtime)
        if stat.S_ISDIR(mode):
            emit(encode_header(entry, "directory", mode, mtime))
            walk(path, entry, emit, count)
        elif stat.S_ISLNK(mode):
            try:
                target = os.readlink(path)
            except OSError as err:
                raise fs_error("read", path, err)
            emit(encode_header(entry, "symlink", mode, mtime, 0, target))
        elif stat.S_ISREG(mode):
            size = info.st_size
            emit(encode_header(entry, "file", mode, mtime, size))
            sent = 0
            for chunk in read_chunks(path, 0, size):
                sent += len(chunk)
                emit(chunk)
            if sent != size:
                raise changed_while_sending(path)
            emit(padding(size))
            count[0] += 1
        else:
            kind = "a socket" if stat.S_ISSOCK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else (
                "a device" if stat.S_ISBLK(mode) or stat.S_ISCHR(mode) else "a special file"
            )
            warn("skipped %s: %s cannot be archived" % (path, kind))


class TarFormatError(Exception):
    pass


class Refusal(CliError):
    def __init__(self, label, entry, reason):
        CliError.__init__(self, "refusing to extract %s: %s %s; nothing was extracted" % (label, quoted(entry), reason))


def quoted(name):
    shown = name[:200] + "\u2026" if len(name) > 200 else name
    text = json.dumps(shown, ensure_ascii=False)
    return re.sub(INVISIBLE, lambda m: written_out(m.group(0)), text)


def written_out(char):
    """`char` as `\\uXXXX`, or as its two UTF-16 halves outside the BMP (names.ts writtenOut)."""
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return "\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
    return "\\u%04x" % code


def archive_stem(name):
    match = re.match(r"^(.*)\.(?:tar\.gz|tgz)$", clean_name(name, ""), re.I | re.S)
    return match.group(1) if match and match.group(1) else None


class GunzipReader(object):
    """Reads a .tar.gz as a stream of tar bytes, in bounded memory (concatenated members too)."""

    def __init__(self, path, label):
        self.handle = open(path, "rb")
        self.z = zlib.decompressobj(31)
        self.fed = False
        self.tail = b""
        self.buffer = bytearray()
        self.ended = False

    def fill(self):
        while not self.buffer and not self.ended:
            if self.tail:
                data, self.tail = self.tail, b""
            else:
                data = self.handle.read(CHUNK)
                if not data:
                    if self.fed:
                        raise TarFormatError("unexpected end of file")
                    self.ended = True
                    return
            self.fed = True
            try:
                self.buffer += self.z.decompress(data, CHUNK)
            except zlib.error:
                raise TarFormatError("incorrect header check")
            self.tail = self.z.unconsumed_tail
            if self.z.eof:
                rest = self.z.unused_data + self.tail or self.handle.read(CHUNK)
                self.z = zlib.decompressobj(31)
                self.fed = False
                self.tail = b""
                # Another gzip member follows, or the stream ends (what follows is ignored).
                if rest[:2] == b"\x1f\x8b":
                    self.tail = rest
                else:
                    self.ended = True

    def read(self, n):
        if not self.buffer:
            self.fill()
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def take(self, n, end_ok):
        parts = []
        left = n
        while left > 0:
            data = self.read(min(left, CHUNK))
            if not data:
                if end_ok and left == n:
                    return None
                raise TarFormatError("the archive ends in the middle of an entry")
            parts.append(data)
            left -= len(data)
        return b"".join(parts)

    def close(self):
        self.handle.close()


def parse_number(block, offset, length, what):
    field = block[offset : offset + length]
    if field[0] & 0x80:
        if field[0] == 0xFF:
            raise TarFormatError("negative %s in a tar header" % what)
        value = field[0] & 0x7F
        for byte in field[1:]:
            value = value * 256 + byte
        if value > 2 ** 53 - 1:
            raise TarFormatError("%s too large in a tar header" % what)
        return value
    text = re.sub(r"[\x00 ].*$", "", field.decode("latin-1"), flags=re.S).strip()
    if text == "":
        return 0
    if not re.match(r"^[0-7]+$", text):
        raise TarFormatError("not a tar archive (bad %s field)" % what)
    return int(text, 8)


def c_string(data):
    end = data.find(b"\x00")
    return (data if end == -1 else data[:end]).decode("utf-8", "replace")


def parse_header(block):
    stored = parse_number(block, 148, 8, "checksum")
    total = sum(block[:148]) + 8 * 0x20 + sum(block[156:])
    if stored != total:
        raise TarFormatError("not a tar archive, or a damaged one (bad header)")
    flag = chr(block[156])
    prefix = c_string(block[345:500]) if block[257:262] == b"ustar" else ""
    base = c_string(block[0:100])
    kind = {"0": "file", "\x00": "file", "7": "file", "5": "directory", "2": "symlink", "1": "hardlink"}.get(flag, "other")
    return {
        "name": prefix + "/" + base if prefix else base,
        "type": kind,
        "flag": flag,
        "mode": parse_number(block, 100, 8, "mode"),
        "size": parse_number(block, 124, 12, "size"),
        "mtime": parse_number(block, 136, 12, "mtime"),
        "linkname": c_string(block[157:257]),
    }


def parse_pax(body):
    result = {}
    at = 0
    while at < len(body):
        space = body.find(b" ", at)
        if space == -1:
            break
        try:
            length = int(body[at:space].decode("latin-1"))
        except ValueError:
            length = 0
        if length <= 0 or at + length > len(body):
            raise TarFormatError("bad pax header in the archive")
        record = body[space + 1 : at + length - 1].decode("utf-8", "replace")
        key, eq, value = record.partition("=")
        if eq and key:
            result[key] = value
        at += length
    return result


def next_entry(reader):
    overrides = {}
    meta = 0
    while True:
        block = reader.take(BLOCK, True)
        if block is None or not block.strip(b"\x00"):
            return None
        header = parse_header(block)
        if header["flag"] in ("x", "g", "L", "K"):
            meta += header["size"]
            if meta > MAX_META_BYTES:
                raise TarFormatError("pax or GNU long-name headers over 1 MiB for one entry")
            body = reader.take(header["size"], False) or b""
            reader.take(len(padding(header["size"])), False)
            if header["flag"] == "x":
                overrides.update(parse_pax(body))
            elif header["flag"] == "L":
                overrides["path"] = c_string(body)
            elif header["flag"] == "K":
                overrides["linkpath"] = c_string(body)
            continue
        if "path" in overrides:
            header["name"] = overrides["path"]
        if "linkpath" in overrides:
            header["linkname"] = overrides["linkpath"]
        if "size" in overrides:
            if not re.match(r"^\d+$", overrides["size"]):
                raise TarFormatError("bad size in a pax header")
            header["size"] = int(overrides["size"])
        if "mtime" in overrides:
            try:
                header["mtime"] = int(float(overrides["mtime"]) // 1)
            except ValueError:
                pass
        if header["type"] in ("symlink", "hardlink"):
            header["size"] = 0
        return header


def skip(reader, size):
    left = size + len(padding(size))
    while left > 0:
        data = reader.read(min(left, CHUNK))
        if not data:
            raise TarFormatError("the archive ends in the middle of an entry")
        left -= len(data)


def relative_name(name, refuse):
    if name.startswith("/"):
        raise refuse("is an absolute path")
    if "\x00" in name:
        raise refuse("has a NUL in its name")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise refuse("has a .. component")
    for part in parts:
        problem = name_problem(part)
        if problem is not None:
            raise refuse("is not a clean name: each part " + problem)
    return "/".join(parts)


def check_link_target(target, refuse):
    for part in target.split("/"):
        if part in ("", ".", ".."):
            continue
        problem = name_problem(part)
        if problem is not None:
            raise refuse("links to a target that is not clean: each part " + problem)


def directory_mode(mode, umask):
    """Permission bits only, clamped to the user's umask, always rwx for the owner."""
    return (mode & 0o777 & ~umask) | 0o700


def user_umask():
    """The process's umask: from /proc where it shows it, else read by setting it and setting it
    back at once (nothing else runs meanwhile: extraction is single-threaded)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def inside(root, path):
    return path == root or path.startswith(root + os.sep)


def resolve_inside(root, start, target, depth):
    if depth > 40 or target.startswith("/"):
        return None
    current = start
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            if not inside(root, current):
                return None
            continue
        following = os.path.join(current, part)
        if os.path.islink(following):
            current = resolve_inside(root, current, os.readlink(following), depth + 1)
            if current is None:
                return None
        else:
            current = following
    return current


def unpack(archive, label, work, limits):
    """Extracts every entry into `work`, checking each as it comes: within `limits` (bytes of
    file content, entries), an entry over either refused before anything of it is written;
    modes clamped to the user's umask."""
    max_bytes, max_entries = limits
    umask = user_umask()
    entries = 0
    kinds = {}
    dirs = {}
    links = []
    files = 0
    total = 0
    reader = GunzipReader(archive, label)
    try:
        while True:
            entry = next_entry(reader)
            if entry is None:
                break
            refuse = (lambda e: lambda reason: Refusal(label, e["name"], reason))(entry)
            rel = relative_name(entry["name"], refuse)
            if entry["type"] == "other":
                warn(
                    "skipped %s in %s: entries of type %s are not extracted"
                    % (quoted(entry["name"]), label, quoted(entry["flag"]))
                )
                skip(reader, entry["size"])
                continue
            if rel == "":
                skip(reader, entry["size"])
                continue
            entries += 1
            if entries > max_entries:
                raise refuse("takes the archive over %d entries (raise it with --max-entries)" % max_entries)
            parts = rel.split("/")
            for i in range(1, len(parts)):
                parent = "/".join(parts[:i])
                kind = kinds.get(parent)
                if kind == "symlink":
                    raise refuse("goes through the symbolic link " + parent)
                if kind is not None and kind != "directory":
                    raise refuse("goes through the file " + parent)
                if kind is None:
                    kinds[parent] = "directory"
                    dirs[parent] = (0o755, None)
            existing = kinds.get(rel)
            if existing is not None and not (existing == "directory" and entry["type"] == "directory"):
                raise refuse("appears twice in the archive")
            kinds[rel] = entry["type"]
            path = os.path.join(work, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if entry["type"] == "directory":
                os.makedirs(path, exist_ok=True)
                dirs[rel] = (directory_mode(entry["mode"], umask), entry["mtime"])
                skip(reader, entry["size"])
                continue
            if entry["type"] == "symlink":
                target = entry["linkname"]
                check_link_target(target, refuse)
                if target == "" or target.startswith("/"):
                    raise refuse("links to an absolute path (%s)" % target)
                if not inside(work, os.path.normpath(os.path.join(os.path.dirname(path), target))):
                    raise refuse("links outside the archive (%s)" % target)
                links.append((rel, target, entry["mtime"]))
                continue
            if entry["type"] == "hardlink":
                target_rel = relative_name(
                    entry["linkname"], lambda reason: refuse("is a hard link whose target " + reason)
                )
                if kinds.get(target_rel) != "file":
                    raise refuse("is a hard link to %s, not a regular file earlier in the archive" % target_rel)
                os.link(os.path.join(work, target_rel), path)
                files += 1
                continue
            total += entry["size"]
            if total > max_bytes:
                raise refuse("takes the archive over %d bytes extracted (raise it with --max-bytes)" % max_bytes)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as sink:
                left = entry["size"]
                while left > 0:
                    data = reader.read(min(left, CHUNK))
                    if not data:
                        raise TarFormatError("the archive ends in the middle of an entry")
                    sink.write(data)
                    left -= len(data)
            reader.take(len(padding(entry["size"])), False)
            os.chmod(path, entry["mode"] & 0o777 & ~umask)
            os.utime(path, (entry["mtime"], entry["mtime"]))
            files += 1
    except CliError:
        raise
    except TarFormatError as err:
        raise CliError("cannot extract %s: %s" % (label, err))
    except OSError as err:
        raise fs_error("extract", label, err)
    finally:
        reader.close()
    for rel, target, mtime in links:
        path = os.path.join(work, rel)
        os.symlink(target, path)
        try:
            os.utime(path, (mtime, mtime), follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass
    return files, dirs, [(rel, target) for rel, target, _ in links]


def extract_archive(archive, label, directory, stem, numbered, limits):
    """Extracts into a new directory `stem` in `directory` (numbered when taken, if allowed), by
    way of a temp dir renamed into place once everything is there: a refusal leaves nothing."""
    directory = os.path.abspath(directory)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise fs_error("create directory", directory, err)
    if not numbered and os.path.lexists(os.path.join(directory, stem)):
        raise CliError("%s already exists; extract elsewhere with -o <dir>" % os.path.join(directory, stem))
    work = temp_path(directory, ".airlock-", ".extract")
    try:
        try:
            os.mkdir(work, 0o700)
        except OSError as err:
            raise fs_error("create directory", work, err)
        files, dirs, links = unpack(archive, label, work, limits)
        tops = os.listdir(work)
        single = len(tops) == 1 and tops[0] in dirs
        content = os.path.join(work, tops[0]) if single else work
        root_meta = dirs[tops[0]] if single else (0o755, None)
        for rel, target in links:
            if resolve_inside(content, os.path.dirname(os.path.join(work, rel)), target, 0) is None:
                raise Refusal(label, rel, "links outside the archive (%s)" % target)
        for rel, meta in sorted(dirs.items(), key=lambda item: -len(item[0].split("/"))):
            if single and rel == tops[0]:
                continue
            os.chmod(os.path.join(work, rel), meta[0])
            if meta[1] is not None:
                os.utime(os.path.join(work, rel), (meta[1], meta[1]))
        path = claim_dir(content, directory, stem, numbered)
        os.chmod(path, directory_mode(root_meta[0], user_umask()))
        if root_meta[1] is not None:
            os.utime(path, (root_meta[1], root_meta[1]))
        return path, files
    except OSError as err:
        raise fs_error("extract", label, err)
    finally:
        release(work)


def claim_dir(content, directory, name, numbered):
    for n in range(0, 10001 if numbered else 1):
        path = os.path.join(directory, numbered_name(name, n))
        try:
            os.mkdir(path)
        except FileExistsError:
            if not numbered:
                raise CliError("%s already exists; extract elsewhere with -o <dir>" % path)
            continue
        except OSError as err:
            raise fs_error("create directory", path, err)
        try:
            os.rename(content, path)
            return path
        except OSError as err:
            try:
                os.rmdir(path)
            except OSError:
                pass
            raise fs_error("write", path, err)
    raise CliError("cannot extract %s in %s: too many directories by that name" % (name, directory))


# ---------------------------------------------------------------------------------------------
# Downloads: streamed to a temp file next to the destination, verified, then named.


def disposition_name(header):
    if not header:
        return None
    extended = re.search(r"filename\*\s*=\s*([^']*)'[^']*'([^;]+)", header, re.I)
    if extended and extended.group(1).strip().lower() == "utf-8":
        try:
            return unquote(extended.group(2).strip(), errors="strict")
        except UnicodeDecodeError:
            pass
    plain = re.search(r'filename\s*=\s*"((?:[^"\\]|\\.)*)"', header, re.I)
    if plain:
        return re.sub(r"\\(.)", r"\1", plain.group(1))
    bare = re.search(r"filename\s*=\s*([^;\s]+)", header, re.I)
    return bare.group(1) if bare else None


def etag_sha256(res, etag=None):
    header = etag if etag is not None else res.getheader("etag")
    match = re.match(r'^(?:W/)?"([0-9a-fA-F]{64})"$', header or "")
    return match.group(1).lower() if match else None


REDIRECTS = (301, 302, 303, 307, 308)


def open_following(url, headers):
    """A GET that follows up to 3 redirects (an s3 relay sends downloads to a short-lived
    presigned URL), http(s) only; to another origin only Range goes along, never the
    token. Returns (conn, res, etag): the relay's own ETag when it redirected (the store's
    is not a SHA-256), else None."""
    relay_etag = None
    for hop in range(4):
        conn, res = open_request("GET", url, headers)
        location = res.getheader("location")
        if res.status not in REDIRECTS or not location or hop == 3:
            return conn, res, relay_etag
        if hop == 0:
            relay_etag = res.getheader("etag") or ""
        conn.close()
        target = urljoin(url, location)
        if urlsplit(target).scheme not in ("http", "https"):
            raise CliError("refusing a redirect to %s" % urlsplit(target).scheme)
        if url_origin(target) != url_origin(url):
            headers = dict((k, v) for k, v in headers.items() if k.lower() == "range")
        url = target


def url_origin(url):
    parts = urlsplit(url)
    return (parts.scheme.lower(), parts.netloc.lower())


def keep_temp(temp, directory, name, numbered):
    """Gives a finished temp file its name without ever replacing a file."""
    for n in range(0, 10001 if numbered else 1):
        path = os.path.normpath(os.path.join(directory, numbered_name(name, n)))
        try:
            try:
                os.link(temp, path)
            except OSError as err:
                if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV):
                    raise
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                os.rename(temp, path)
            release(temp)
            return path
        except FileExistsError:
            if not numbered:
                raise CliError("%s already exists; name it with -o to overwrite it" % path)
        except OSError as err:
            raise fs_error("write", path, err)
    raise CliError("cannot write %s in %s: too many files by that name" % (name, directory))


def download(url, headers, target, name, sha256, output, policy):
    """output: ("stdout",) | ("path", path) | ("dir", dir, numbered). Returns (path, name, size)."""
    known = sha256.lower() if sha256 else None

    def attempt():
        conn, res, relay_etag = open_following(url, headers)
        try:
            if res.status != 200:
                raise status_error(res, read_text(res), "%s refused %s" % (target[0], target[2]))
            etag = etag_sha256(res, relay_etag)
            if etag and known and etag != known:
                raise CliError("the %s is corrupt: its ETag does not match the expected SHA-256" % target[2])
            expected = etag or known
            if not expected:
                raise CliError("%s sent no ETag to verify the %s against" % (target[0], target[2]))
            what = "the ETag" if etag else "the expected SHA-256"
            corrupt = CliError("the %s is corrupt: its SHA-256 does not match %s" % (target[2], what))
            got = name or disposition_name(res.getheader("content-disposition")) or "download"
            length = res.getheader("content-length")
            length = int(length) if length and length.isdigit() else None
            if output[0] == "stdout":
                return receive_stdout(res, expected, corrupt, length, got)
            directory = output[1] if output[0] == "dir" else os.path.dirname(os.path.abspath(output[1]))
            if output[0] == "dir" and not output[2]:
                refuse_existing(os.path.normpath(os.path.join(directory, clean_name(got, "file"))))
            temp = temp_path(directory, ".airlock-", ".part")
            try:
                size = receive_file(res, temp, expected, corrupt, length)
                if output[0] == "path":
                    os.rename(temp, output[1])
                    TEMPS.discard(temp)
                    return output[1], got, size
                return keep_temp(temp, directory, clean_name(got, "file"), output[2]), got, size
            except OSError as err:
                raise fs_error("write", output[1] if output[0] == "path" else os.path.join(directory, got), err)
            finally:
                release(temp)
        finally:
            conn.close()

    return with_retry(policy, target, attempt)


def refuse_existing(path):
    if os.path.lexists(path):
        raise CliError("%s already exists; name it with -o to overwrite it" % path)


def receive_file(res, temp, expected, corrupt, length):
    digest = hashlib.sha256()
    size = 0
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as sink:
        while True:
            try:
                chunk = res.read(CHUNK)
            except (OSError, http.client.HTTPException) as err:
                raise network_error(err)
            if not chunk:
                break
            size += len(chunk)
            if length is not None and size > length:
                raise corrupt
            digest.update(chunk)
            sink.write(chunk)
    if (length is not None and size != length) or digest.hexdigest() != expected:
        if length is not None and size < length:
            raise NetworkError("socket hang up", True)
        raise corrupt
    return size


def receive_stdout(res, expected, corrupt, length, name):
    digest = hashlib.sha256()
    size = 0
    while True:
        try:
            chunk = res.read(CHUNK)
        except (OSError, http.client.HTTPException) as err:
            if size == 0:
                raise network_error(err)
            raise CliError("connection lost while writing %s to stdout: %s" % (name, network_error(err).reason))
        if not chunk:
            break
        size += len(chunk)
        digest.update(chunk)
        sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()
    if (length is not None and size != length) or digest.hexdigest() != expected:
        raise corrupt
    return "-", name, size


# ---------------------------------------------------------------------------------------------
# get, pull, ls


def cmd_get(args):
    spec = {
        "output": (True, "o", False),
        "extract": (False, None, False),
        "max-bytes": (True, None, False),
        "max-entries": (True, None, False),
        "help": (False, "h", False),
    }
    values, positionals = parse_args(args, spec, USAGE["get"])
    if values.get("help"):
        return out(command_help("get"))
    if len(positionals) != 1:
        raise UsageError("get takes exactly one file id or share URL; usage: " + USAGE["get"])
    ref = positionals[0]
    option = values.get("output")
    if values.get("extract") and option == "-":
        raise UsageError("--extract needs a directory, not stdout; usage: " + USAGE["get"])
    check_extract_flags(values, USAGE["get"])
    limits = extract_limits(values, USAGE["get"])
    policy = Policy()
    if re.match(r"^https?://", ref, re.I):
        source = share_source(ref)
    else:
        relay = Relay(policy)
        record = relay.get_file(ref)
        action = "download of " + clean_name(record.get("name") or "", "the file")
        source = (relay.content_url(ref), relay.auth(), ("relay", relay.url, action), record.get("name"), record.get("sha256"))
    url, headers, target, name, sha256 = source
    if values.get("extract"):
        return out(get_extracted(source, option or ".", policy, limits))
    if option == "-":
        path, got, _ = download(url, headers, target, name, sha256, ("stdout",), policy)
        note("wrote %s to stdout" % clean_name(got, "the file"))
        return 0
    if option is None or os.path.isdir(option):
        output = ("dir", option or ".", False)
    else:
        output = ("path", option)
    path, _, _ = download(url, headers, target, name, sha256, output, policy)
    out(path)
    return 0


def share_source(link):
    parts = urlsplit(link)
    if not parts.netloc:
        raise UsageError("not a valid share URL: " + link)
    if not re.search(r"/d/[^/]+$", parts.path):
        raise UsageError("not a share URL (expected \u2026/d/<token>): " + link)
    origin = "%s://%s" % (parts.scheme.lower(), parts.netloc)
    return (link, {}, ("relay", origin, "download of the shared file"), None, None)


def not_an_archive(name):
    return CliError("%s is not a .tar.gz archive; get it without --extract" % clean_name(name, "the file"))


def get_extracted(source, option, policy, limits):
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
        _, got, _ = download(url, headers, target, name, sha256, ("path", temp), policy)
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
            _, _, size = download(url, relay.auth(), target, shown, item.get("sha256"), ("path", temp), policy)
            path, files = extract_archive(temp, shown, directory, stem, True, extract_max)
        finally:
            release(temp)
        result.update({"size": size, "path": path, "extracted": True, "files": files})
        return result
    path, _, size = download(url, relay.auth(), target, shown, item.get("sha256"), ("dir", directory, True), policy)
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


def cmd_request(args):
    """`airlock request`: asks a person for a file through an upload link (/u/<token>)."""
    spec = {
        "name": (True, None, False),
        "max-bytes": (True, None, False),
        "expires": (True, None, False),
        "json": (False, None, False),
        "cancel": (True, None, False),
        "help": (False, "h", False),
    }
    values, positionals = parse_args(args, spec, USAGE["request"])
    if values.get("help"):
        return out(command_help("request"))
    if positionals:
        raise UsageError("request takes no arguments; usage: " + USAGE["request"])
    if values.get("cancel") is not None:
        if any(values.get(k) is not None for k in ("name", "max-bytes", "expires")):
            raise UsageError("--cancel takes only the request id; usage: " + USAGE["request"])
        request_id = values["cancel"]
        path = "/v1/requests/" + quote(request_id, safe="")
        state = Relay(Policy()).call("DELETE", path, "cancelling upload link " + request_id)
        if not isinstance(state, dict) or not isinstance(state.get("requestId"), str):
            raise CliError("relay gave an unexpected answer to cancelling upload link " + request_id)
        out(to_json(state) if values.get("json") else "cancelled " + state["requestId"])
        return 0
    body = {}
    if values.get("name") is not None:
        body["name"] = values["name"]
    if values.get("max-bytes") is not None:
        body["maxBytes"] = max_extract_bytes(values["max-bytes"], USAGE["request"])
    if values.get("expires") is not None:
        body["ttlSeconds"] = parse_duration(values["expires"], "--expires", USAGE["request"])
    action = "the upload link request"
    created = Relay(Policy()).call("POST", "/v1/requests", action, body)
    valid = isinstance(created, dict) and all(isinstance(created.get(k), str) for k in ("url", "requestId"))
    if not valid:
        raise CliError("relay gave an unexpected answer to " + action)
    out(to_json(created) if values.get("json") else created["url"])
    return 0


def cmd_rm(args):
    values, positionals = parse_args(args, {"help": (False, "h", False)}, USAGE["rm"])
    if values.get("help"):
        return out(command_help("rm"))
    if len(positionals) != 1 or not positionals[0]:
        raise UsageError("rm takes exactly one file id; usage: " + USAGE["rm"])
    file_id = positionals[0]
    path = "/v1/files/" + quote(file_id, safe="")
    deleted = Relay(Policy()).call("DELETE", path, "deleting file " + file_id)
    out("deleted %s" % deleted.get("fileId"))
    return 0


# ---------------------------------------------------------------------------------------------
# mcp: an MCP server on stdin and stdout (newline-delimited JSON-RPC 2.0), as the Node shim's
# (agent-shim/src/mcp/): initialize, ping, tools/list, tools/call, notifications/progress for a
# call with a progressToken, notifications/cancelled. The main thread reads stdin, so ping and
# cancel are answered while a call runs; calls run one at a time on a worker thread, the state of
# the one running in MCP_CALL, where the HTTP and upload code above looks for it.

# BEGIN generated MCP tools (scripts/build-shim.mjs, from src/mcp/tool-definitions.ts)
MCP_SERVED = json.loads(r"""
{
 "tools": [
  {
   "name": "send_file",
   "title": "Send a file",
   "description": "Upload a file from this sandbox and get a share link to it. Use it to give the user a file you made (a report, a chart, an archive) rather than pasting its contents. The result has `url`, the link (anyone who has it can download the file until `expiresAt`), with `fileId`, `name`, `size` and `sha256` of what was sent. The file itself stays until `fileExpiresAt`: until then a fresh link can be minted to it (`share_link`, or `airlock link <fileId>`). With `to`, the file is also posted to each of those chats, with `caption`; `deliveries` has one record per chat, and one whose `status` is not `delivered` carries the reason in `error` (the link works all the same).",
   "inputSchema": {
    "type": "object",
    "properties": {
     "path": {
      "type": "string",
      "minLength": 1,
      "description": "Path of the file in this sandbox, absolute or relative to the working directory. A directory is sent as one <name>.tar.gz archive of everything in it."
     },
     "to": {
      "type": "array",
      "items": {
       "type": "string",
       "pattern": "^(telegram:-?\\d+|discord:\\d+|slack:[A-Z0-9]+|whatsapp:\\d+)$"
      },
      "description": "Chats to post the file to as well, each telegram:<chatId>, discord:<channelId>, slack:<channelId> or whatsapp:<wa_id>; only chats this conversation allows. Leave out to only get the link."
     },
     "caption": {
      "type": "string",
      "description": "Text posted with the file in the chats of `to`. Only with `to`."
     },
     "expires": {
      "type": "string",
      "pattern": "^(\\d+|(\\d+[smhdw])+)$",
      "description": "How long the link works (it cannot outlive the file): 90s, 10m, 24h, 7d, 2w, a sum such as 1h30m, or seconds. Leave out for the relay's default."
     },
     "max_downloads": {
      "type": "integer",
      "minimum": 1,
      "maximum": 1000000,
      "description": "How many times the link serves the file before it refuses. Leave out for no limit."
     }
    },
    "required": [
     "path"
    ],
    "additionalProperties": false
   },
   "outputSchema": {
    "type": "object",
    "properties": {
     "fileId": {
      "type": "string"
     },
     "name": {
      "type": "string"
     },
     "size": {
      "type": "integer",
      "minimum": 0
     },
     "sha256": {
      "type": "string"
     },
     "url": {
      "type": "string"
     },
     "expiresAt": {
      "type": "string",
      "description": "An ISO 8601 time, UTC."
     },
     "fileExpiresAt": {
      "type": "string",
      "description": "An ISO 8601 time, UTC."
     },
     "status": {
      "enum": [
       "pending",
       "verified"
      ]
     },
     "deduped": {
      "type": "boolean"
     },
     "uploadedBytes": {
      "type": "integer",
      "minimum": 0
     },
     "deliveries": {
      "type": "array",
      "items": {
       "type": "object",
       "properties": {
        "fileId": {
         "type": "string"
        },
        "to": {
         "type": "string"
        },
        "status": {
         "enum": [
          "sending",
          "delivered",
          "failed"
         ]
        },
        "mode": {
         "type": "string"
        },
        "method": {
         "type": "string"
        },
        "messageId": {
         "type": [
          "string",
          "null"
         ]
        },
        "error": {}
       },
       "required": [
        "fileId",
        "to",
        "status"
       ]
      }
     },
     "archive": {
      "type": "boolean"
     },
     "files": {
      "type": "integer",
      "minimum": 0
     }
    },
    "required": [
     "fileId",
     "name",
     "size",
     "sha256",
     "url",
     "expiresAt",
     "fileExpiresAt",
     "status",
     "deduped",
     "uploadedBytes",
     "deliveries"
    ]
   },
   "annotations": {
    "readOnlyHint": false,
    "destructiveHint": false,
    "idempotentHint": false,
    "openWorldHint": true
   }
  },
  {
   "name": "receive_files",
   "title": "Receive files",
   "description": "Fetch the files people have sent you (attachments in the chat, files provided for this task, uploads through a `request_file` link) that have not been fetched yet. Each one is written into the sandbox's inbox directory ($AIRLOCK_INBOX_DIR when it is set, else uploads/ in the working directory), never over an existing file (a clash becomes \"name (1).ext\"), and the result has one line per file: `[User uploaded: <name> (<size>) at <path>]`, <path> being exactly where it was written. Each file is returned once; an empty result means nothing new has arrived.",
   "inputSchema": {
    "type": "object",
    "properties": {
     "wait_seconds": {
      "type": "integer",
      "minimum": 0,
      "maximum": 3600,
      "description": "When nothing has arrived yet, wait up to this many seconds for a file. Leave out (or 0) not to wait."
     }
    },
    "additionalProperties": false
   },
   "outputSchema": {
    "type": "object",
    "properties": {
     "files": {
      "type": "array",
      "items": {
       "type": "object",
       "properties": {
        "itemId": {
         "type": "string"
        },
        "fileId": {
         "type": "string"
        },
        "name": {
         "type": "string"
        },
        "size": {
         "type": "integer",
         "minimum": 0
        },
        "sha256": {
         "type": "string"
        },
        "path": {
         "type": "string"
        },
        "source": {
         "type": "string"
        }
       },
       "required": [
        "fileId",
        "name",
        "size",
        "sha256",
        "path",
        "source"
       ]
      }
     }
    },
    "required": [
     "files"
    ]
   },
   "annotations": {
    "readOnlyHint": false,
    "destructiveHint": false,
    "idempotentHint": false,
    "openWorldHint": false
   }
  },
  {
   "name": "request_file",
   "title": "Ask a person for a file",
   "description": "Make an upload link to give a person (in the chat, or in your answer) so that they can send you one file: they open it in a browser, or run `curl -T <file> <url>`. The file then arrives in your inbox, for `receive_files`. The link takes one file.",
   "inputSchema": {
    "type": "object",
    "properties": {
     "name": {
      "type": "string",
      "minLength": 1,
      "description": "The file name suggested to the person."
     },
     "max_bytes": {
      "type": "integer",
      "minimum": 1,
      "description": "The largest file the link takes, in bytes. Leave out for the relay's limit."
     },
     "expires": {
      "type": "string",
      "pattern": "^(\\d+|(\\d+[smhdw])+)$",
      "description": "How long the link takes an upload: 90s, 10m, 24h, 7d, 2w, a sum such as 1h30m, or seconds. Leave out for the relay's default."
     }
    },
    "additionalProperties": false
   },
   "outputSchema": {
    "type": "object",
    "properties": {
     "requestId": {
      "type": "string"
     },
     "url": {
      "type": "string"
     },
     "name": {
      "type": [
       "string",
       "null"
      ]
     },
     "maxBytes": {
      "type": "integer",
      "minimum": 0
     },
     "expiresAt": {
      "type": "string",
      "description": "An ISO 8601 time, UTC."
     }
    },
    "required": [
     "requestId",
     "url",
     "maxBytes",
     "expiresAt"
    ]
   },
   "annotations": {
    "readOnlyHint": false,
    "destructiveHint": false,
    "idempotentHint": false,
    "openWorldHint": true
   }
  },
  {
   "name": "share_link",
   "title": "Make a new share link",
   "description": "Mint a fresh share link to one of your files (its earlier links keep working), for instance when the first one expired, or to give a link that works for a short time or a few downloads.",
   "inputSchema": {
    "type": "object",
    "properties": {
     "file_id": {
      "type": "string",
      "minLength": 1,
      "description": "A file's id, as `list_files` or `send_file` gave it."
     },
     "expires": {
      "type": "string",
      "pattern": "^(\\d+|(\\d+[smhdw])+)$",
      "description": "How long the link works (it cannot outlive the file): 90s, 10m, 24h, 7d, 2w, a sum such as 1h30m, or seconds. Leave out for the relay's default."
     },
     "max_downloads": {
      "type": "integer",
      "minimum": 1,
      "maximum": 1000000,
      "description": "How many times the link serves the file before it refuses. Leave out for no limit."
     }
    },
    "required": [
     "file_id"
    ],
    "additionalProperties": false
   },
   "outputSchema": {
    "type": "object",
    "properties": {
     "fileId": {
      "type": "string"
     },
     "url": {
      "type": "string"
     },
     "expiresAt": {
      "type": "string",
      "description": "An ISO 8601 time, UTC."
     },
     "maxDownloads": {
      "type": [
       "integer",
       "null"
      ]
     }
    },
    "required": [
     "fileId",
     "url",
     "expiresAt",
     "maxDownloads"
    ]
   },
   "annotations": {
    "readOnlyHint": false,
    "destructiveHint": false,
    "idempotentHint": false,
    "openWorldHint": false
   }
  },
  {
   "name": "list_files",
   "title": "List your files",
   "description": "List the files this conversation has stored (sent files and files received), newest first, each with its id, name, size, expiry and a fresh share link.",
   "inputSchema": {
    "type": "object",
    "properties": {},
    "additionalProperties": false
   },
   "outputSchema": {
    "type": "object",
    "properties": {
     "files": {
      "type": "array",
      "items": {
       "type": "object",
       "properties": {
        "fileId": {
         "type": "string"
        },
        "name": {
         "type": "string"
        },
        "size": {
         "type": "integer",
         "minimum": 0
        },
        "sha256": {
         "type": "string"
        },
        "contentType": {
         "type": "string"
        },
        "status": {
         "enum": [
          "pending",
          "verified"
         ]
        },
        "url": {
         "type": "string"
        },
        "urlExpiresAt": {
         "type": "string",
         "description": "An ISO 8601 time, UTC."
        },
        "expiresAt": {
         "type": "string",
         "description": "An ISO 8601 time, UTC."
        }
       },
       "required": [
        "fileId",
        "name",
        "size",
        "sha256",
        "status",
        "url",
        "expiresAt"
       ]
      }
     }
    },
    "required": [
     "files"
    ]
   },
   "annotations": {
    "readOnlyHint": true,
    "destructiveHint": false,
    "idempotentHint": true,
    "openWorldHint": false
   }
  },
  {
   "name": "remove_file",
   "title": "Remove a file",
   "description": "Delete one of your files for good: every share link to it stops working at once.",
   "inputSchema": {
    "type": "object",
    "properties": {
     "file_id": {
      "type": "string",
      "minLength": 1,
      "description": "A file's id, as `list_files` or `send_file` gave it."
     }
    },
    "required": [
     "file_id"
    ],
    "additionalProperties": false
   },
   "outputSchema": {
    "type": "object",
    "properties": {
     "fileId": {
      "type": "string"
     },
     "deletedAt": {
      "type": "string",
      "description": "An ISO 8601 time, UTC."
     }
    },
    "required": [
     "fileId",
     "deletedAt"
    ]
   },
   "annotations": {
    "readOnlyHint": false,
    "destructiveHint": true,
    "idempotentHint": true,
    "openWorldHint": false
   }
  }
 ],
 "instructions": "Airlock moves files between this sandbox and people. send_file uploads a file (or a directory, as one archive) and answers a share link, and can post it to a chat; receive_files writes the files people sent into the inbox directory and says where; request_file makes an upload link to give a person. share_link, list_files and remove_file manage the files already sent."
}
""")
# END generated MCP tools

MCP_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
MCP_PROGRESS_EVERY_S = 0.1
READONLY_VAR = "AIRLOCK_READONLY"
MCP_CALL = None  # the tool call running now, if any


class CancelledError(CliError):
    def __init__(self):
        CliError.__init__(self, "cancelled")


class McpProtocolError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def mcp_check_cancelled():
    """Once the running call is cancelled, no request of it starts."""
    if MCP_CALL is not None and MCP_CALL.cancelled.is_set():
        raise CancelledError()


def mcp_outside_call(fn):
    """Runs fn as if no call were running: for taking back what a cancelled call registered."""
    global MCP_CALL
    call, MCP_CALL = MCP_CALL, None
    try:
        return fn()
    finally:
        MCP_CALL = call


class McpCall(object):
    """One tools/call: its cancel flag, the connections a cancel cuts, its progress, and the
    warning lines its work printed (a tool's result carries them)."""

    def __init__(self, request_id, token, send):
        self.id = request_id
        self.token = token
        self.send = send
        self.cancelled = threading.Event()
        self.lock = threading.Lock()
        self.conns = []
        self.warnings = []
        self.label = None
        self.total = None
        self.done = 0
        self.last = 0
        self.sent_at = 0.0
        self.timer = None
        self.stopped = False

    def watch(self, conn, method):
        """A download (GET) or stored bytes (PUT) is cut off by a cancel, so it is connected now
        to have a socket to shut. A request that registers something runs to its end once
        started, so that the call knows all it registered."""
        if method not in ("GET", "PUT"):
            return
        conn.connect()
        with self.lock:
            self.conns.append(conn)
        if self.cancelled.is_set():
            self.cut()

    def cancel(self):
        self.cancelled.set()
        self.stop()
        self.cut()

    def cut(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for conn in conns:
            sock = conn.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def moved(self, n):
        """Stored bytes sent: progress, rising, at most every 100 ms, the last figure of a quiet
        spell sent when it ends (a stalled transfer still reports how far it got)."""
        if self.token is None:
            return
        with self.lock:
            self.done += n
            wait = self.sent_at + MCP_PROGRESS_EVERY_S - time.monotonic()
            if (self.total is not None and self.done >= self.total) or wait <= 0:
                self._flush()
            elif self.timer is None:
                self.timer = threading.Timer(wait, self.flush)
                self.timer.daemon = True
                self.timer.start()

    def flush(self):
        with self.lock:
            self._flush()

    def _flush(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        done = self.done if self.total is None else min(self.done, self.total)
        if self.stopped or done <= self.last:
            return
        self.last = done
        self.sent_at = time.monotonic()
        params = {"progressToken": self.token, "progress": done}
        if self.total is not None:
            params["total"] = self.total
        if self.label is not None:
            params["message"] = self.label
        self.send({"method": "notifications/progress", "params": params})

    def stop(self):
        """Nothing more: the call has answered, or was cancelled."""
        with self.lock:
            self.stopped = True
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None


def mcp_is_id(value):
    if isinstance(value, bool):
        return False
    return isinstance(value, str) or isinstance(value, int) or (isinstance(value, float) and value == value and abs(value) != float("inf"))


def mcp_value_problem(name, value, schema):
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            return "%s must be a string" % name
        if "minLength" in schema and len(value) < schema["minLength"]:
            return "%s must not be empty" % name
        pattern = schema.get("pattern")
        # JSON Schema patterns are ECMAScript's, whose $ matches only at the very end.
        if pattern is not None and not re.search(re.sub(r"\$$", r"\\Z", pattern), value):
            return "%s %s does not match %s" % (name, to_json(value), pattern)
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
            return "%s must be a whole number" % name
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            if high is None:
                return "%s must be at least %d" % (name, low)
            return "%s must be from %d to %d" % (name, low or 0, high)
    elif kind == "array":
        if not isinstance(value, list):
            return "%s must be an array" % name
        for item in value:
            problem = mcp_value_problem("each of " + name, item, schema.get("items") or {})
            if problem is not None:
                return problem
    return None


def mcp_check_arguments(tool, args):
    """A call's arguments against the tool's input schema, worded as the Node shim words each
    problem: (arguments, None), or (None, the problem)."""
    name, schema = tool["name"], tool["inputSchema"]
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None, "%s takes its arguments as an object" % name
    known = list(schema["properties"])
    for key in args:
        if key not in schema["properties"]:
            takes = "only " + ", ".join(known) if known else "no arguments"
            return None, "%s has no argument %s; it takes %s" % (name, key, takes)
    for key in schema.get("required", []):
        if key not in args:
            return None, "%s needs %s" % (name, key)
    for key, value in args.items():
        problem = mcp_value_problem(key, value, schema["properties"][key])
        if problem is not None:
            return None, "%s: %s" % (name, problem)
        if schema["properties"][key].get("type") == "integer":
            args[key] = int(value)
    return args, None


def mcp_text(structured, text=None, extra=None):
    content = [{"type": "text", "text": to_json(structured) if text is None else text}]
    return {"content": content + (extra or []), "structuredContent": structured}


def mcp_in_tool_words(err):
    """The relay names its JSON field (ttlSeconds) and the CLI its flag; the model gave expires."""
    if isinstance(err, RefusalError):
        err.message = re.sub(r"(ttlSeconds|--expires): ", "expires: ", err.message, count=1)
    return err


def mcp_link_body(args, tool):
    body = {}
    if "expires" in args:
        body["ttlSeconds"] = parse_duration(args["expires"], "expires", tool)
    if "max_downloads" in args:
        body["maxDownloads"] = args["max_downloads"]
    return body


def mcp_mint(relay, file_id, body):
    try:
        return mint_link(relay, file_id, body)
    except RefusalError as err:
        raise mcp_in_tool_words(err)


def mcp_send_file(args):
    """send_file: as send --json, a directory as one archive; answered as JSON text, structured
    content and a resource_link. A cancelled call takes back the file it registered."""
    path = args["path"]
    destinations = []
    for to in args.get("to") or []:
        if to not in destinations:
            destinations.append(to)
    caption = args.get("caption")
    if caption is not None and not destinations:
        raise UsageError("send_file: caption needs to")
    link = mcp_link_body(args, "send_file")
    policy = Policy()
    relay = Relay(policy)
    sender = Sender(relay, policy)
    is_dir = check_sendable(path)
    mime = ARCHIVE_TYPE
    if not is_dir:
        try:
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                sample = handle.read(SAMPLE_BYTES)
        except OSError as err:
            raise fs_error("read", path, err)
        mime = sniff(sample, size > len(sample))[0]
        MCP_CALL.total = size
        MCP_CALL.label = os.path.basename(path.rstrip("/")) or path
    sent = None
    try:
        sent = send_directory(path, sender) if is_dir else send_file(path, sender)
        result = sent
        if link:
            minted = mcp_mint(relay, result["fileId"], link)
            result["url"], result["expiresAt"] = minted.get("url"), minted.get("expiresAt")
        if result["status"] == "pending":
            note("%s is still being verified by the relay" % result["name"])
        start = len(MCP_CALL.warnings)
        for to in destinations:
            result["deliveries"].append(deliver(relay, result, to, caption))
        failures = MCP_CALL.warnings[start:]
        link_block = {"type": "resource_link", "uri": result["url"], "name": result["name"], "mimeType": mime, "size": result["size"]}
        answer = mcp_text(result, "\n".join([to_json(result)] + failures), [link_block])
        if failures:
            answer["isError"] = True
        return answer
    finally:
        if sent is not None and MCP_CALL.cancelled.is_set():
            file_id = sent["fileId"]
            try:
                mcp_outside_call(lambda: relay.call("DELETE", "/v1/files/" + quote(file_id, safe=""), "deleting file " + file_id))
            except CliError:
                pass


def mcp_receive_files(args):
    """receive_files: writes new inbox files as pull does ($AIRLOCK_INBOX_DIR, else ./uploads;
    read-only when AIRLOCK_READONLY says so) and answers pull's lines, the files as structured
    content; with wait_seconds, waits that long for something to arrive."""
    wait = args.get("wait_seconds") or 0
    directory = os.path.abspath(os.environ.get(INBOX_DIR_VAR) or DEFAULT_PULL_DIR)
    readonly = re.match(r"^(1|true|yes)\Z", (os.environ.get(READONLY_VAR) or "").strip(), re.I) is not None
    policy = Policy()
    relay = Relay(policy)
    items = (wait_for_inbox(relay, wait) or []) if wait > 0 else list_inbox(relay)
    files, lines = [], []
    start = len(MCP_CALL.warnings)

    def pulled_one(pulled, line):
        files.append(pulled)
        lines.append(line)

    if items:
        pull_items(relay, items, directory, policy, None, readonly, pulled_one)
    failures = MCP_CALL.warnings[start:]
    answer = mcp_text({"files": files}, "\n".join(lines + failures) or "nothing new in the inbox")
    if failures:
        answer["isError"] = True
    return answer


def mcp_request_file(args):
    body = {}
    if "name" in args:
        body["name"] = args["name"]
    if "max_bytes" in args:
        body["maxBytes"] = args["max_bytes"]
    if "expires" in args:
        body["ttlSeconds"] = parse_duration(args["expires"], "expires", "request_file")
    action = "the upload link request"
    try:
        created = Relay(Policy()).call("POST", "/v1/requests", action, body)
    except RefusalError as err:
        raise mcp_in_tool_words(err)
    if not isinstance(created, dict) or not all(isinstance(created.get(k), str) for k in ("url", "requestId")):
        raise CliError("relay gave an unexpected answer to " + action)
    return mcp_text(created)


def mcp_share_link(args):
    file_id = args["file_id"]
    minted = mcp_mint(Relay(Policy()), file_id, mcp_link_body(args, "share_link"))
    return mcp_text({"fileId": file_id, "url": minted.get("url"), "expiresAt": minted.get("expiresAt"), "maxDownloads": minted.get("maxDownloads")})


def mcp_list_files(args):
    answer = Relay(Policy()).call("GET", "/v1/files", "listing files")
    return mcp_text({"files": (answer.get("files") or []) if isinstance(answer, dict) else []})


def mcp_remove_file(args):
    file_id = args["file_id"]
    deleted = Relay(Policy()).call("DELETE", "/v1/files/" + quote(file_id, safe=""), "deleting file " + file_id)
    return mcp_text(deleted, "deleted %s" % deleted.get("fileId"))


MCP_HANDLERS = {
    "send_file": mcp_send_file,
    "receive_files": mcp_receive_files,
    "request_file": mcp_request_file,
    "share_link": mcp_share_link,
    "list_files": mcp_list_files,
    "remove_file": mcp_remove_file,
}


def mcp_run_tool(tool, args):
    """A tool's result; arguments that break its schema, and its own failures, are a result with
    isError and the one line the CLI would print."""
    args, problem = mcp_check_arguments(tool, args)
    try:
        if problem is not None:
            raise CliError(problem)
        return MCP_HANDLERS[tool["name"]](args)
    except CliError as err:
        line = err.message
    except Exception as err:  # a tool's failure, never the server's
        line = "unexpected error: %s" % (err or type(err).__name__)
    return {"content": [{"type": "text", "text": "airlock: " + one_line(line)}], "isError": True}


class McpServer(object):
    def __init__(self):
        self.stdout = sys.stdout.buffer
        sys.stdout = sys.stderr  # stdout carries protocol messages only
        self.out_lock = threading.Lock()
        self.calls_lock = threading.Lock()
        self.calls = {}
        self.tools = dict((tool["name"], tool) for tool in MCP_SERVED["tools"])

    def send(self, message):
        full = {"jsonrpc": "2.0"}
        full.update(message)
        data = (json.dumps(full, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self.out_lock:
            self.stdout.write(data)
            self.stdout.flush()

    def serve(self):
        import queue

        self.queue = queue.Queue()
        worker = threading.Thread(target=self.work)
        worker.daemon = True
        worker.start()
        for raw in iter(sys.stdin.buffer.readline, b""):
            line = raw.decode("utf-8", "replace").strip()
            if line:
                self.receive(line)
        with self.calls_lock:
            left = list(self.calls.values())
        for call in left:
            call.cancel()  # the client went away
        self.queue.put(None)
        worker.join()
        return 0

    def work(self):
        global MCP_CALL
        while True:
            job = self.queue.get()
            if job is None:
                return
            call, tool, args = job
            if not call.cancelled.is_set():
                MCP_CALL = call
                try:
                    result = mcp_run_tool(tool, args)
                finally:
                    MCP_CALL = None
                call.stop()
                if not call.cancelled.is_set():
                    self.send({"id": call.id, "result": result})
            with self.calls_lock:
                self.calls.pop(call.id, None)

    def receive(self, line):
        try:
            message = json.loads(line)
        except ValueError:
            return self.send({"id": None, "error": {"code": -32700, "message": "Parse error"}})
        is_object = isinstance(message, dict)
        rid = message.get("id") if is_object and mcp_is_id(message.get("id")) else None
        try:
            if not is_object:
                raise McpProtocolError(-32600, "Invalid Request: one JSON-RPC object a line")
            if message.get("jsonrpc") != "2.0" or ("method" not in message and rid is None):
                raise McpProtocolError(-32600, "Invalid Request")
            if "method" not in message:
                return  # a response: this server asks nothing
            method = message["method"]
            if not isinstance(method, str):
                raise McpProtocolError(-32600, "Invalid Request")
            params = message.get("params")
            params = {} if params is None else params
            if not isinstance(params, dict):
                raise McpProtocolError(-32602, "params must be an object")
            if "id" not in message:
                return self.notified(method, params)
            if rid is None:
                raise McpProtocolError(-32600, "Invalid Request: bad id")
            result = self.answer(rid, method, params)
            if result is not None:
                self.send({"id": rid, "result": result})
        except McpProtocolError as err:
            if (not is_object or "id" not in message) and err.code != -32600:
                return  # a notification
            self.send({"id": rid, "error": {"code": err.code, "message": err.message}})

    def notified(self, method, params):
        if method != "notifications/cancelled":
            return  # initialized, and any other, need nothing
        rid = params.get("requestId")
        if mcp_is_id(rid):
            with self.calls_lock:
                call = self.calls.get(rid)
            if call is not None:
                call.cancel()

    def answer(self, rid, method, params):
        if method == "initialize":
            asked = params.get("protocolVersion")
            if not isinstance(asked, str):
                raise McpProtocolError(-32602, "initialize needs protocolVersion")
            return {
                "protocolVersion": asked if asked in MCP_PROTOCOL_VERSIONS else MCP_PROTOCOL_VERSIONS[0],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "airlock", "title": "Airlock", "version": VERSION},
                "instructions": MCP_SERVED["instructions"],
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": MCP_SERVED["tools"]}
        if method == "tools/call":
            name = params.get("name")
            if not isinstance(name, str):
                raise McpProtocolError(-32602, "tools/call needs name")
            tool = self.tools.get(name)
            if tool is None:
                raise McpProtocolError(-32602, "Unknown tool: " + name)
            meta = params.get("_meta")
            token = meta.get("progressToken") if isinstance(meta, dict) else None
            call = McpCall(rid, token if mcp_is_id(token) else None, self.send)
            with self.calls_lock:
                self.calls[rid] = call
            self.queue.put((call, tool, params.get("arguments")))
            return None
        raise McpProtocolError(-32601, "Method not found: " + method)


def cmd_mcp(args):
    """`airlock mcp`: serves the tools until stdin ends, then exits 0 once the call still running
    is cancelled and cleaned up. The relay is read from the environment per call."""
    values, positionals = parse_args(args, {"help": (False, "h", False)}, USAGE["mcp"])
    if values.get("help"):
        return out(command_help("mcp"))
    if positionals:
        raise UsageError("mcp takes no arguments; usage: " + USAGE["mcp"])
    return McpServer().serve()


# ---------------------------------------------------------------------------------------------


COMMANDS = {
    "send": cmd_send,
    "get": cmd_get,
    "pull": cmd_pull,
    "request": cmd_request,
    "link": cmd_link,
    "rm": cmd_rm,
    "ls": cmd_ls,
    "mcp": cmd_mcp,
}


def main(argv):
    if not argv:
        raise UsageError("no command given; usage: " + USAGE["global"])
    command = argv[0]
    if command in COMMANDS:
        return COMMANDS[command](argv[1:])
    if command == "help":
        topic = argv[1] if len(argv) > 1 else None
        return out(command_help(topic) if topic in PAGES else HELP)
    if command == "tool-schema":
        raise UsageError("%s is not in the Python shim; run it with the Node shim (/shim/airlock.mjs)" % command)
    if not command.startswith("-"):
        raise UsageError("unknown command %s; usage: %s" % (command, USAGE["global"]))
    values, positionals = parse_args(argv, {"help": (False, "h", False), "version": (False, "v", False)}, USAGE["global"])
    if values.get("help"):
        return out(HELP)
    if values.get("version"):
        return out(VERSION)
    raise UsageError("unexpected argument %s; usage: %s" % (positionals[0], USAGE["global"]))


def remove_temps():
    for path in list(TEMPS):
        release(path)


def run():
    import signal

    def interrupted(signum, frame):
        remove_temps()
        name = "SIGINT" if signum == signal.SIGINT else "SIGTERM"
        note("airlock: interrupted (%s)" % name)
        os._exit(130 if signum == signal.SIGINT else 143)

    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    code = 1
    try:
        code = main(sys.argv[1:]) or 0
    except CliError as err:
        warn(err.message)
        code = err.exit_code
    except BrokenPipeError:
        code = 0
    except Exception as err:  # never a stack trace, unless AIRLOCK_DEBUG asks for one
        warn("unexpected error: %s" % (err or type(err).__name__))
        if os.environ.get("AIRLOCK_DEBUG"):
            import traceback

            traceback.print_exc()
    finally:
        remove_temps()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    sys.exit(code)


if __name__ == "__main__":
    run()
