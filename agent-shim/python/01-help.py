#!/usr/bin/env python3
# airlock.py: the Python shim of Airlock, for sandboxes with Python but no Node (or curl).
#
#   python3 -c "import urllib.request,sys; urllib.request.urlretrieve(sys.argv[1]+'/shim/airlock.py', '/usr/local/bin/airlock')" "$AIRLOCK_URL" && chmod +x /usr/local/bin/airlock
#
# Python 3.8 or newer, standard library only. The same commands, output lines, JSON fields and
# exit codes as the Node shim (/shim/airlock.mjs): send, get, pull, request, link, rm, ls, mcp (not
# tool-schema). Everything is streamed:
# memory stays flat whatever the size of a file.
import contextlib
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
from concurrent.futures import Future, ThreadPoolExecutor
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

# The usage lines and help pages, rendered from the Node shim's (agent-shim/src/cli/help.ts, the one
# source) in ASCII, without tool-schema.
# BEGIN generated help (scripts/build-shim.mjs, from agent-shim/src/cli/python-help.ts)
USAGE = PAGES = HELP = None  # written here by scripts/build-shim.mjs
# END generated help


def command_help(name):
    """`airlock <command> --help`: that command's usage line, what it does, its options, an example."""
    return PAGES[name]


