// The protocol mistakes an MCP client library never makes, sent as raw lines to `airlock mcp` of
// both shims (no relay needed): each answered as JSON-RPC 2.0 says, the same by both, and
// nothing but JSON-RPC on stdout.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareShim } from "../shim/run-shim";
import { processEnv, shimDrivers, type ShimDriver } from "../shim/shims";

let scratch: string;
let drivers: ShimDriver[];

beforeAll(async () => {
  prepareShim();
  scratch = await mkdtemp(join(tmpdir(), "airlock-mcp-protocol-"));
  drivers = await shimDrivers(scratch);
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/**
 * Writes `lines` to `airlock mcp`, closes stdin once `answers` lines have come back (closing it
 * earlier would cancel the calls still running), and returns each stdout line parsed, and the
 * exit code.
 */
function converse(
  driver: ShimDriver,
  lines: string[],
  answers: number,
): Promise<{ out: unknown[]; code: number | null }> {
  const [program, ...lead] = driver.argv;
  const child = spawn(program!, [...lead, "mcp"], {
    env: processEnv({ PATH: driver.path, HOME: scratch, TMPDIR: scratch }),
    cwd: scratch,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
    if (stdout.split("\n").length > answers) child.stdin.end();
  });
  child.stdin.write(lines.map((line) => `${line}\n`).join(""));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      // Every line on stdout must be JSON: a stray one fails the parse here.
      const out =
        stdout === ""
          ? []
          : stdout
              .trimEnd()
              .split("\n")
              .map((line) => JSON.parse(line) as unknown);
      resolve({ out, code });
    });
  });
}

const request = (id: number, method: string, params?: object) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) });

describe.each(["node", "python"] as const)("airlock mcp of the %s shim, on raw lines", (name) => {
  const driver = () => drivers.find((d) => d.name === name)!;

  it("negotiates the protocol version and answers the rest as JSON-RPC 2.0 says", async () => {
    const { out, code } = await converse(
      driver(),
      [
        request(1, "initialize", {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "t", version: "1" },
        }),
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        request(2, "initialize", { protocolVersion: "1999-01-01", capabilities: {} }),
        request(3, "ping"),
        "{not json",
        JSON.stringify([request(4, "ping")]),
        request(5, "resources/list"),
        request(6, "tools/call", { arguments: {} }),
        request(7, "tools/call", { name: "nope" }),
        JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/list", params: [1] }),
        JSON.stringify({ jsonrpc: "2.0", method: "no/such/notification" }),
        request(9, "tools/call", { name: "list_files", arguments: { all: true } }),
      ],
      10,
    );
    expect(code).toBe(0);
    const byId = (id: unknown) => out.filter((m) => (m as { id?: unknown }).id === id);
    expect(byId(1)[0]).toMatchObject({
      jsonrpc: "2.0",
      result: {
        protocolVersion: "2025-06-18",
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: "airlock" },
      },
    });
    // A version it does not speak: it answers its latest, for the client to decide.
    expect(byId(2)[0]).toMatchObject({ result: { protocolVersion: "2025-11-25" } });
    expect(byId(3)).toEqual([{ jsonrpc: "2.0", id: 3, result: {} }]);
    expect(byId(null)).toEqual([
      { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } },
      {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "Invalid Request: one JSON-RPC object a line" },
      },
    ]);
    expect(byId(5)).toEqual([
      {
        jsonrpc: "2.0",
        id: 5,
        error: { code: -32601, message: "Method not found: resources/list" },
      },
    ]);
    expect(byId(6)).toEqual([
      { jsonrpc: "2.0", id: 6, error: { code: -32602, message: "tools/call needs name" } },
    ]);
    expect(byId(7)).toEqual([
      { jsonrpc: "2.0", id: 7, error: { code: -32602, message: "Unknown tool: nope" } },
    ]);
    expect(byId(8)).toEqual([
      { jsonrpc: "2.0", id: 8, error: { code: -32602, message: "params must be an object" } },
    ]);
    // A tool's bad arguments are the model's to correct: a result, not a protocol error.
    const text = "airlock: list_files has no argument all; it takes no arguments";
    expect(byId(9)).toEqual([
      { jsonrpc: "2.0", id: 9, result: { content: [{ type: "text", text }], isError: true } },
    ]);
    // Notifications get no answer: 10 answers for 12 lines, two of them notifications.
    expect(out).toHaveLength(10);
  });
});
