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

/** What `initialize` tells the client (and through it the model) about the server. */
export const INSTRUCTIONS =
  "Airlock moves files between this sandbox and people. send_file uploads a file (or a " +
  "directory, as one archive) and answers a share link, and can post it to a chat; " +
  "receive_files writes the files people sent into the inbox directory and says where; " +
  "request_file makes an upload link to give a person. share_link, list_files and " +
  "remove_file manage the files already sent.";
