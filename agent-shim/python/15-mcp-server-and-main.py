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
        if RESUMABLE and signum == signal.SIGINT:
            note("airlock: " + one_line("interrupted: run the same command again to resume the upload of " + RESUMABLE[0]))
        else:
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
