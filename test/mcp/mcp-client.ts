import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { ShimDriver } from "../shim/shims";

/** `airlock mcp` of one shim, attached to the official MCP client over stdio. */
export interface McpSession {
  client: Client;
  /** Everything that reached the client's transport but was not a JSON-RPC message. */
  transportErrors: Error[];
  /** What the server wrote on stderr so far. */
  stderr(): string;
  close(): Promise<void>;
}

/**
 * Starts `airlock mcp` with exactly `env` (plus PATH, HOME and TMPDIR), as an agent host does,
 * and completes the MCP handshake. Stdout must carry JSON-RPC only: any other line reaches
 * `transportErrors`.
 */
export async function connectShim(
  driver: ShimDriver,
  run: { env: Record<string, string>; cwd: string; home: string },
): Promise<McpSession> {
  const [command, ...lead] = driver.argv;
  const transport = new StdioClientTransport({
    command: command!,
    args: [...lead, "mcp"],
    env: { PATH: driver.path, HOME: run.home, TMPDIR: run.home, ...run.env },
    cwd: run.cwd,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const transportErrors: Error[] = [];
  const client = new Client({ name: "airlock-mcp-test", version: "1.0.0" });
  client.onerror = (error) => {
    // A progress notification the server sent before it read a cancel reaches the client
    // after the client forgot the call's token: valid JSON-RPC, raced, not a stray line.
    if (error.message.startsWith("Received a progress notification for an unknown token")) return;
    transportErrors.push(error);
  };
  await client.connect(transport);
  return { client, transportErrors, stderr: () => stderr, close: () => client.close() };
}

/** A tool result's text blocks, joined by newlines. */
export function textOf(result: object): string {
  const blocks = ((result as { content?: unknown }).content ?? []) as {
    type: string;
    text?: string;
  }[];
  return blocks
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}
