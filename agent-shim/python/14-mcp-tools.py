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


