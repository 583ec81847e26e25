/**
 * Every tool of Airlock's two MCP servers, as data: the stdio server in the shims (`airlock mcp`,
 * which reads and writes the sandbox's disk) and the relay's `POST /mcp` (which hands out URLs
 * instead). `airlock tool-schema --format mcp` prints the stdio tools from here, the Python shim
 * carries a generated copy, and the relay lists its own from here: one source for all.
 *
 * No imports (this module is bundled into the shim and the Worker alike) and no code beyond
 * picking a server's tools.
 */

import {
  DELIVER_FILE,
  CREATE_UPLOAD,
  LIST_FILES,
  RECEIVE_FILES_BY_URL,
  REMOVE_FILE,
  REQUEST_FILE,
  SHARE_LINK,
} from "./link-tools";
import { RECEIVE_FILES, SEND_FILE } from "./sandbox-tools";
import type { ToolDefinition, ToolServer } from "./tool-schema";

export {
  DESTINATION_PATTERN,
  DESTINATION_SHAPES,
  DURATION_PATTERN,
  MAX_DOWNLOADS,
  type ObjectSchema,
  type ToolAnnotations,
  type ToolDefinition,
  type ToolServer,
} from "./tool-schema";

export const TOOL_DEFINITIONS: readonly ToolDefinition[] = [
  SEND_FILE,
  RECEIVE_FILES,
  RECEIVE_FILES_BY_URL,
  REQUEST_FILE,
  SHARE_LINK,
  LIST_FILES,
  REMOVE_FILE,
  CREATE_UPLOAD,
  DELIVER_FILE,
];

/** What the stdio server's `initialize` tells the client (and through it the model). */
export const STDIO_INSTRUCTIONS =
  "Airlock moves files between this sandbox and people. send_file uploads a file (or a " +
  "directory, as one archive) and answers a share link, and can post it to a chat; " +
  "receive_files writes the files people sent into the inbox directory and says where; " +
  "request_file makes an upload link to give a person. share_link, list_files and " +
  "remove_file manage the files already sent.";

/** MCP's `Tool`: what `tools/list` answers for one tool. */
export type McpTool = Omit<ToolDefinition, "servers">;

/** The tools `server` offers, as its `tools/list` answers them (without the `servers` marker). */
export function toolsFor(server: ToolServer): McpTool[] {
  return TOOL_DEFINITIONS.filter((tool) => tool.servers.includes(server)).map(
    ({ servers: _servers, ...tool }) => tool,
  );
}
