import { toolsFor } from "../../../src/mcp/tool-definitions.js";
import type { ToolArguments } from "./arguments.js";
import { listFilesTool, removeFileTool, requestFileTool, shareLinkTool } from "./file-tools.js";
import { receiveFilesTool } from "./receive-files.js";
import { sendFileTool } from "./send-file.js";
import type { ServedTool, ToolResult } from "./server.js";

/** What runs each tool `airlock mcp` offers. */
const HANDLERS: Record<string, (args: ToolArguments) => Promise<ToolResult>> = {
  send_file: sendFileTool,
  receive_files: receiveFilesTool,
  request_file: requestFileTool,
  share_link: shareLinkTool,
  list_files: listFilesTool,
  remove_file: removeFileTool,
};

/** The stdio server's tools: each definition (src/mcp/tool-definitions.ts) with its handler. */
export function stdioTools(): ServedTool[] {
  return toolsFor("stdio").map((definition) => {
    const run = HANDLERS[definition.name];
    if (run === undefined) throw new Error(`no handler for the tool ${definition.name}`);
    return { definition, run };
  });
}
