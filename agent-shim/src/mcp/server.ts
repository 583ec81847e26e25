import { setMaxListeners } from "node:events";
import type * as Readline from "node:readline";
import type { McpTool } from "../../../src/mcp/tool-definitions.js";
import { CliError } from "../cli/errors.js";
import { failureLine } from "../cli/output.js";
import { runInCall, type ToolCall } from "../cli/tool-call.js";
import { VERSION } from "../cli/version.js";
import { checkArguments, type ToolArguments } from "./arguments.js";

/**
 * MCP over stdio, by hand: newline-delimited JSON-RPC 2.0 on stdin and stdout, the few methods
 * a tools-only server answers (`initialize`, `ping`, `tools/list`, `tools/call`), progress for a
 * call that asked for it, and `notifications/cancelled`. No SDK: the loop is small, and the shim
 * stays one file of Node built-ins.
 */

/** The protocol versions this server speaks, newest first (the MCP specification's dates). */
export const PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/** JSON-RPC 2.0's error codes. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;

/** At most ten progress notifications a second per call. */
const PROGRESS_EVERY_MS = 100;

/** What a tool call answers: MCP's `CallToolResult`. */
export interface ToolResult {
  content: object[];
  structuredContent?: object;
  isError?: boolean;
}

/** Runs one tool with arguments that match its input schema. */
export type ToolHandler = (args: ToolArguments) => Promise<ToolResult>;

/** A tool the server offers: its definition and what runs it. */
export interface ServedTool {
  definition: McpTool;
  run: ToolHandler;
}

type Id = string | number;
interface Message {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

/** A protocol mistake, answered as a JSON-RPC error. */
class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Serves `tools` on stdin/stdout until stdin ends; then cancels the calls still running and
 * resolves once each has cleaned up. Stdout carries protocol messages only: anything else the
 * process writes there goes to stderr instead.
 */
export async function serve(tools: ServedTool[], instructions: string): Promise<void> {
  const out = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  const send = (message: object) => out(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
  const byName = new Map(tools.map((tool) => [tool.definition.name, tool]));
  const running = new Map<Id, { cancel: AbortController; done: Promise<void> }>();

  const call = (id: Id, params: Record<string, unknown>): void => {
    const { name, arguments: args, _meta: meta } = params;
    if (typeof name !== "string") throw new ProtocolError(INVALID_PARAMS, "tools/call needs name");
    const tool = byName.get(name);
    if (tool === undefined) throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${name}`);
    const cancel = new AbortController();
    setMaxListeners(0, cancel.signal); // every request of the call listens to it
    const context: ToolCall = { signal: cancel.signal };
    const token = (meta as { progressToken?: unknown } | undefined)?.progressToken;
    const progress = isId(token) ? new ProgressNotifier(token, send) : undefined;
    if (progress) {
      context.progress = (done, total, label) => progress.report(done, total, label);
      // A cancelled call says nothing more, progress included.
      cancel.signal.addEventListener("abort", () => progress.stop(), { once: true });
    }
    const done = runInCall(context, () => runTool(tool, args))
      .then((result) => {
        progress?.stop(); // nothing after the answer
        if (!cancel.signal.aborted) send({ id, result });
      })
      .finally(() => running.delete(id));
    running.set(id, { cancel, done });
  };

  const answer = (id: Id, method: string, params: Record<string, unknown>): object | undefined => {
    switch (method) {
      case "initialize":
        return initialized(params, instructions);
      case "ping":
        return {};
      case "tools/list":
        return { tools: tools.map((tool) => tool.definition) };
      case "tools/call":
        call(id, params);
        return undefined;
      default:
        throw new ProtocolError(METHOD_NOT_FOUND, `Method not found: ${method}`);
    }
  };

  const receive = (line: string): void => {
    let message: Message;
    try {
      message = JSON.parse(line) as Message;
    } catch {
      return void send({ id: null, error: { code: PARSE_ERROR, message: "Parse error" } });
    }
    const id = isId(message?.id) ? message.id : null;
    try {
      if (typeof message !== "object" || message === null || Array.isArray(message)) {
        throw new ProtocolError(INVALID_REQUEST, "Invalid Request: one JSON-RPC object a line");
      }
      if (message.jsonrpc !== "2.0" || (message.method === undefined && id === null)) {
        throw new ProtocolError(INVALID_REQUEST, "Invalid Request");
      }
      if (message.method === undefined) return; // a response: this server asks nothing
      if (typeof message.method !== "string")
        throw new ProtocolError(INVALID_REQUEST, "Invalid Request");
      const params = message.params ?? {};
      if (typeof params !== "object" || params === null || Array.isArray(params)) {
        throw new ProtocolError(INVALID_PARAMS, "params must be an object");
      }
      if (!("id" in message)) return notified(message.method, params as Record<string, unknown>);
      if (id === null) throw new ProtocolError(INVALID_REQUEST, "Invalid Request: bad id");
      const result = answer(id, message.method, params as Record<string, unknown>);
      if (result !== undefined) send({ id, result });
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      if (message?.id === undefined && err.code !== INVALID_REQUEST) return; // a notification
      send({ id, error: { code: err.code, message: err.message } });
    }
  };

  const notified = (method: string, params: Record<string, unknown>): void => {
    if (method !== "notifications/cancelled") return; // initialized, and any other, need nothing
    const { requestId, reason } = params;
    if (!isId(requestId)) return;
    running.get(requestId)?.cancel.abort(typeof reason === "string" ? reason : "cancelled");
  };

  // node:readline is loaded here, not at start-up: the other commands never need it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, by design
  const { createInterface } = require("node:readline") as typeof Readline;
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) if (line.trim() !== "") receive(line);
  const left = [...running.values()];
  for (const { cancel } of left) cancel.abort("the client went away");
  await Promise.all(left.map(({ done }) => done));
}

/** The answer to `initialize`: the client's protocol version when this server speaks it. */
function initialized(params: Record<string, unknown>, instructions: string): object {
  const asked = params.protocolVersion;
  if (typeof asked !== "string") {
    throw new ProtocolError(INVALID_PARAMS, "initialize needs protocolVersion");
  }
  return {
    protocolVersion: PROTOCOL_VERSIONS.includes(asked) ? asked : PROTOCOL_VERSIONS[0],
    capabilities: { tools: { listChanged: false } },
    serverInfo: { name: "airlock", title: "Airlock", version: VERSION },
    instructions,
  };
}

/**
 * Runs a tool: arguments that break its schema, and any failure of its own, are a result with
 * `isError` and the one line the CLI would print, so the model can read it and try again.
 */
async function runTool(tool: ServedTool, args: unknown): Promise<ToolResult> {
  const checked = checkArguments(tool.definition.name, tool.definition.inputSchema, args);
  try {
    if ("problem" in checked) throw new CliError(checked.problem);
    return await tool.run(checked.args);
  } catch (err) {
    return { content: [{ type: "text", text: failureLine(err) }], isError: true };
  }
}

/**
 * `notifications/progress` for one call: only rising, at most every 100 ms, the last figure of
 * a quiet spell sent when the spell ends (a transfer that stalls still reports how far it got),
 * and the end at once.
 */
class ProgressNotifier {
  private last = 0;
  private sentAt = 0;
  private latest: { done: number; total: number; label: string } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly token: Id,
    private readonly send: (message: object) => void,
  ) {}

  report(done: number, total: number, label: string): void {
    if (this.stopped || done <= this.last) return;
    this.latest = { done, total, label };
    const wait = this.sentAt + PROGRESS_EVERY_MS - Date.now();
    if (done >= total || wait <= 0) return this.flush();
    this.timer ??= setTimeout(() => this.flush(), wait);
  }

  /** No more notifications: the call has answered. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.stopped || this.latest === undefined || this.latest.done <= this.last) return;
    const { done, total, label } = this.latest;
    this.last = done;
    this.sentAt = Date.now();
    const params = { progressToken: this.token, progress: done, total, message: label };
    this.send({ method: "notifications/progress", params });
  }
}

function isId(value: unknown): value is Id {
  return typeof value === "string" || (typeof value === "number" && Number.isFinite(value));
}
