import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { RunningRelay } from "../support/relay";

const run = promisify(execFile);

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

/** Runs the real curl; never throws: the exit code and both streams come back. */
export async function curl(
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("curl", args, { cwd, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

/** The operator puts `bytes` in a session's inbox as `name`. */
export async function seed(
  relay: RunningRelay,
  sessionId: string,
  name: string,
  bytes: Uint8Array,
): Promise<void> {
  const response = await fetch(
    `${relay.url}/v1/sessions/${sessionId}/inbox?name=${encodeURIComponent(name)}`,
    {
      method: "POST",
      headers: { authorization: `Bearer ${relay.adminToken}` },
      body: bytes,
    },
  );
  if (response.status !== 201) throw new Error(`seed failed: ${response.status}`);
}

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
