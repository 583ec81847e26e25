import { parseCommandArgs } from "../cli/args.js";
import { UsageError } from "../cli/errors.js";
import { USAGE, commandHelp } from "../cli/help.js";
import { print } from "../cli/output.js";
import { serve } from "../mcp/server.js";
import { stdioTools } from "../mcp/tools.js";
import { STDIO_INSTRUCTIONS } from "../../../src/mcp/tool-definitions.js";

const OPTIONS = {
  help: { type: "boolean", short: "h" },
} as const;

/**
 * `airlock mcp`: an MCP server on stdin/stdout (newline-delimited JSON-RPC) offering the tools
 * `airlock tool-schema --format mcp` prints. Runs until stdin ends, then exits 0 once the calls
 * still running are cancelled and cleaned up. The relay is read from the environment per call,
 * so a missing AIRLOCK_URL is each call's error, not the server's.
 */
export async function mcp(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE.mcp);
  if (values.help) return print(commandHelp("mcp"));
  if (positionals.length > 0) throw new UsageError(`mcp takes no arguments; usage: ${USAGE.mcp}`);
  await serve(stdioTools(), STDIO_INSTRUCTIONS);
  // Keep-alive sockets to the relay would hold the process up for seconds more.
  process.exit(0);
}
