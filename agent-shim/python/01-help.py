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
import math
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
chat or terminal. They open it in a browser, or run the command printed on stderr
(curl --fail-with-body -T <file> <link>/, which keeps the file's name); the file
arrives in this sandbox's inbox, for pull. The link takes one file""",
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


