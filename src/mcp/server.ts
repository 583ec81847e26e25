import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
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
import { ZodJsonSchemaCheck } from "./json-schema-check";
import { TOOL_CALLS, type ToolContext } from "./tool-calls";
import { toolsFor } from "./tool-definitions";

/** The relay's tools as `tools/list` answers them: one source with the shims' (tool-definitions.ts). */
const TOOLS = toolsFor("relay");
const checks = new ZodJsonSchemaCheck();

/**
 * Answers one MCP request (`POST /mcp`) for an authenticated session: a fresh server and a
 * stateless transport per request (no `Mcp-Session-Id`; the session is the bearer's), JSON
 * answers rather than an SSE stream. A tool the relay refuses is a result with `isError` and one
 * line in `airlock`'s words; only protocol mistakes (an unknown tool, bad JSON-RPC) are errors.
 */
export async function answerMcp(context: ToolContext, request: Request): Promise<Response> {
  const server = new Server(
    { name: "airlock", version: SHIM_VERSION },
    { capabilities: { tools: {} }, jsonSchemaValidator: checks },
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
  const check = checks.getValidator<Record<string, unknown>>(tool.inputSchema)(args);
  if (!check.valid) return failure(`invalid arguments to ${name}: ${check.errorMessage}`);
  try {
    const { text, structured } = await call.run(context, check.data);
    return { content: [{ type: "text", text }], structuredContent: structured };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    logEvent("mcp_tool_refused", { sessionId: context.session.id, tool: name, code: error.code });
    return failure(`relay refused ${call.action(check.data)}: ${error.code}: ${error.message}`);
  }
}

function failure(line: string): CallToolResult {
  return { content: [{ type: "text", text: line }], isError: true };
}
