import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { RunningRelay } from "../support/relay";

export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** The official MCP client, connected to the relay's `/mcp` with a session token as bearer. */
export async function mcpClient(relay: RunningRelay, token: string): Promise<Client> {
  const client = new Client({ name: "airlock-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${relay.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/** A tool call's result, typed as the tools answer (text plus structuredContent). */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The one text line of a result. */
export function textOf(result: CallToolResult): string {
  const [first] = result.content;
  if (first?.type !== "text") throw new Error(`no text in ${JSON.stringify(result)}`);
  return first.text;
}

/**
 * Runs the real curl in `cwd`, its stdin the file `stdin` (in `cwd`) when given; never throws:
 * the exit code and both streams come back.
 */
export function curl(
  args: string[],
  cwd: string,
  stdin?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("curl", args, { cwd, stdio: [stdin ? "pipe" : "ignore", "pipe", "pipe"] });
    if (stdin && child.stdin) createReadStream(join(cwd, stdin)).pipe(child.stdin);
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** The operator puts `bytes` in a session's inbox as `name`. */
export { seedInbox as seed } from "../support/seed-inbox";

/** What `receive_files` lists for one item. */
export interface ListedItem {
  itemId: string;
  fileId: string;
  name: string;
  size: number;
  sha256: string;
  downloadUrl: string;
  expiresAt: string;
}

export function itemsOf(result: CallToolResult): ListedItem[] {
  return (result.structuredContent as { items: ListedItem[] }).items;
}
