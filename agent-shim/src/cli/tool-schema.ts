import { toolsFor, type McpTool } from "../../../src/mcp/tool-definitions.js";

/**
 * The tools an agent host registers so that a model can move files, printed in each host format
 * by `airlock tool-schema`. The definitions live in src/mcp/tool-definitions.ts, shared with the
 * relay's MCP endpoint: `--format mcp` prints the ones `airlock mcp` serves, and `--format openai`
 * the two a host without MCP runs in the sandbox as `airlock send` and `airlock pull` (see
 * docs/agent-integration.md).
 */

/** The host formats `airlock tool-schema --format` prints. */
export const TOOL_SCHEMA_FORMATS = ["openai", "mcp"] as const;
export type ToolSchemaFormat = (typeof TOOL_SCHEMA_FORMATS)[number];

/** The tools a host maps to shim commands itself. */
const COMMAND_TOOLS = ["send_file", "receive_files"];

/**
 * OpenAI function tools, as Chat Completions' `tools` takes them. `strict` is false, and said so:
 * omitted, the Responses API would default it to true, whose rules (every property required,
 * optional ones nullable) these schemas do not follow. For the Responses API, lift `function` up:
 * `{ type: "function", ...tool.function }`.
 */
function openai(): object {
  return toolsFor("stdio")
    .filter((tool) => COMMAND_TOOLS.includes(tool.name))
    .map((tool) => ({
      type: "function",
      function: {
        name: tool.name,
        description: tool.description,
        parameters: tool.inputSchema,
        strict: false,
      },
    }));
}

/** The result of MCP's `tools/list`, as `airlock mcp` answers it. */
export function mcpToolList(): { tools: McpTool[] } {
  return { tools: toolsFor("stdio") };
}

/** The tool definitions in `format`, as a JSON value. */
export function toolSchema(format: ToolSchemaFormat): object {
  return format === "mcp" ? mcpToolList() : openai();
}
