import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import { AppError } from "../errors";
import { logEvent } from "../log";
import { SHIM_VERSION } from "../shim/bundle.generated";
import { checkArguments } from "../../agent-shim/src/mcp/arguments";
import { TOOL_CALLS, type ToolContext } from "./tool-calls";
import { toolsFor } from "./tool-definitions";

/** The relay's tools as `tools/list` answers them: one source with the shims' (tool-definitions.ts). */
const TOOLS = toolsFor("relay");
/**
 * The SDK's JSON Schema checker, made once per isolate rather than per request (it is only
 * used for client answers this server never asks for: elicitation).
 */
let schemaChecks: AjvJsonSchemaValidator | undefined;

/**
 * Answers one MCP request (`POST /mcp`) for an authenticated session: a fresh server and a
 * stateless transport per request (no `Mcp-Session-Id`; the session is the bearer's), JSON
 * answers rather than an SSE stream. A tool the relay refuses is a result with `isError` and one
 * line in `airlock`'s words; only protocol mistakes (an unknown tool, bad JSON-RPC) are errors.
 */
export async function answerMcp(context: ToolContext, request: Request): Promise<Response> {
  const server = new Server(
    { name: "airlock", version: SHIM_VERSION },
    {
      capabilities: { tools: {} },
      jsonSchemaValidator: (schemaChecks ??= new AjvJsonSchemaValidator()),
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, (call) =>
    callTool(context, call.params.name, call.params.arguments ?? {}),
  );
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  return transport.handleRequest(request);
}

async function callTool(
  context: ToolContext,
  name: string,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  const tool = TOOLS.find((candidate) => candidate.name === name);
  const call = TOOL_CALLS[name];
  if (!tool || !call) throw new McpError(ErrorCode.InvalidParams, `no tool named ${name}`);
  // Checked and worded as `airlock mcp` checks them: one wording on both servers.
  const checked = checkArguments(name, tool.inputSchema, args);
  if ("problem" in checked) return failure(checked.problem);
  try {
    const { text, structured } = await call.run(context, checked.args);
    return { content: [{ type: "text", text }], structuredContent: structured };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    logEvent("mcp_tool_refused", { sessionId: context.session.id, tool: name, code: error.code });
    const line = `relay refused ${call.action(checked.args)}: ${error.code}: ${error.message}`;
    return failure(inToolWords(line));
  }
}

/** The relay's body fields, as the tools call them (`airlock mcp` does the same). */
const ARGUMENT_NAMES: Record<string, string> = {
  ttlSeconds: "expires",
  maxBytes: "max_bytes",
  maxDownloads: "max_downloads",
};

function inToolWords(line: string): string {
  return line.replace(/\b(ttlSeconds|maxBytes|maxDownloads): /, (_, field: string) => {
    return `${ARGUMENT_NAMES[field]}: `;
  });
}

function failure(line: string): CallToolResult {
  return { content: [{ type: "text", text: line }], isError: true };
}
