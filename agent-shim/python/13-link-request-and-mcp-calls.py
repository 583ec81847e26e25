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
    if values.get("json"):
        out(to_json(created))
        return 0
    out(created["url"])
    # As the Node shim: on stderr, so that url=$(airlock request) still gets the link alone.
    note("from a terminal: curl --fail-with-body -T <file> %s/" % created["url"].rstrip("/"))
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
MCP_SERVED = None  # written here by scripts/build-shim.mjs
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


