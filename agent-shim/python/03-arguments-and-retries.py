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
    value = parse_size(option)
    if value is None:
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


