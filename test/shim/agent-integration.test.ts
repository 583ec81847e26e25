import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendAgainstFakeRelay } from "./send-against-fake-relay";
import { RUNTIMES, failureLine, prepareShim, runShim } from "./run-shim";

// `airlock tool-schema` and `airlock send --media-tag`: what an agent host and a MEDIA: gateway
// read from the shim (docs/agent-integration.md).

const PATTERN = String.raw`^(telegram:-?\d+|discord:\d+|slack:[A-Z0-9]+|whatsapp:\d+)$`;
const TOOL_SCHEMA_USAGE = "airlock tool-schema [--format openai|mcp]";

interface JsonSchema {
  type: string;
  properties: Record<string, { type: string; items?: { type: string; pattern?: string } }>;
  required?: string[];
  additionalProperties: boolean;
}

interface OpenAiTool {
  type: string;
  function: { name: string; description: string; parameters: JsonSchema; strict: boolean };
}

interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema: { type: string };
  annotations: Record<string, boolean>;
}

/** What a line of `send --json` holds that these tests look at. */
interface Sent {
  url: string;
  name: string;
  deliveries: { to: string; status: string }[];
}

let dir: string;

beforeAll(async () => {
  prepareShim();
  dir = await mkdtemp(join(tmpdir(), "airlock-shim-agent-"));
  await writeFile(join(dir, "report.pdf"), `%PDF-1.4\n${randomBytes(2000).toString("hex")}\n`);
  await writeFile(join(dir, "chart.png"), randomBytes(3000));
  await writeFile(join(dir, "-odd name.txt"), "a name that starts with a dash\n");
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each(RUNTIMES)("airlock tool-schema under $name", ({ node }) => {
  // No relay: a host prints the schema wherever it likes, with no session.
  const run = (args: string[]) => runShim(args, { node, env: {}, cwd: dir });

  const sendFileSchema = (schema: JsonSchema) => {
    expect(schema).toEqual({
      type: "object",
      properties: {
        path: expect.objectContaining({ type: "string" }),
        caption: expect.objectContaining({ type: "string" }),
        to: expect.objectContaining({ type: "array", items: { type: "string", pattern: PATTERN } }),
        expires: expect.objectContaining({ type: "string" }),
        max_downloads: expect.objectContaining({ type: "integer", minimum: 1 }),
      },
      required: ["path"],
      additionalProperties: false,
    });
  };
  const receiveFilesSchema = (schema: JsonSchema) => {
    expect(schema).toEqual({
      type: "object",
      properties: { wait_seconds: expect.objectContaining({ type: "integer", minimum: 0 }) },
      additionalProperties: false,
    });
  };

  it("prints OpenAI function tools by default, exactly as --format openai does", async () => {
    const result = await run(["tool-schema"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const explicit = await run(["tool-schema", "--format", "openai"]);
    expect(explicit.stdout).toBe(result.stdout);
    expect((await run(["tool-schema", "--format=openai"])).stdout).toBe(result.stdout);

    const tools = JSON.parse(result.stdout) as OpenAiTool[];
    expect(tools.map((t) => t.function.name)).toEqual(["send_file", "receive_files"]);
    for (const tool of tools) {
      // Only the fields the API takes: an unknown one would get the request refused.
      expect(Object.keys(tool).sort()).toEqual(["function", "type"]);
      expect(tool.type).toBe("function");
      expect(Object.keys(tool.function).sort()).toEqual([
        "description",
        "name",
        "parameters",
        "strict",
      ]);
      // Not strict, and said so: the Responses API takes an omitted `strict` as true.
      expect(tool.function.strict).toBe(false);
      expect(tool.function.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    }
    const [sendFile, receiveFiles] = tools;
    sendFileSchema(sendFile!.function.parameters);
    receiveFilesSchema(receiveFiles!.function.parameters);
    expect(sendFile!.function.description).toMatch(/share link/);
    expect(sendFile!.function.description).toMatch(/`url`/);
    expect(receiveFiles!.function.description).toContain(
      "($AIRLOCK_INBOX_DIR when it is set, else uploads/ in the working directory)",
    );
    // The link and the file expire apart; a fresh link can be minted while the file lasts.
    expect(sendFile!.function.description).toContain("until `expiresAt`");
    expect(sendFile!.function.description).toContain("stays until `fileExpiresAt`");
    expect(sendFile!.function.description).toContain("airlock link <fileId>");
    expect(receiveFiles!.function.description).toContain(
      "[User uploaded: <name> (<size>) at <path>]",
    );
  });

  it("prints an MCP tools/list result with --format mcp", async () => {
    const result = await run(["tool-schema", "--format", "mcp"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const listed = JSON.parse(result.stdout) as { tools: McpTool[] };
    expect(Object.keys(listed)).toEqual(["tools"]);
    expect(listed.tools.map((t) => t.name)).toEqual([
      "send_file",
      "receive_files",
      "request_file",
      "share_link",
      "list_files",
      "remove_file",
    ]);
    for (const tool of listed.tools) {
      expect(Object.keys(tool).sort()).toEqual([
        "annotations",
        "description",
        "inputSchema",
        "name",
        "outputSchema",
        "title",
      ]);
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema.type).toBe("object");
    }
    const [sendFile, receiveFiles] = listed.tools;
    sendFileSchema(sendFile!.inputSchema);
    receiveFilesSchema(receiveFiles!.inputSchema);
    expect(sendFile!.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    });

    // The two a host runs itself, word for word, as the OpenAI format.
    const openai = JSON.parse((await run(["tool-schema"])).stdout) as OpenAiTool[];
    expect(listed.tools.slice(0, 2).map((t) => [t.name, t.description, t.inputSchema])).toEqual(
      openai.map((t) => [t.function.name, t.function.description, t.function.parameters]),
    );
  });

  it("gives `to` the destinations that send --to accepts, and no others", async () => {
    const tools = JSON.parse((await run(["tool-schema"])).stdout) as OpenAiTool[];
    const pattern = new RegExp(tools[0]!.function.parameters.properties.to!.items!.pattern!);
    const good = ["telegram:123", "telegram:-100123", "discord:456", "slack:C0FFEE", "whatsapp:1"];
    for (const to of good) {
      expect(pattern.test(to), to).toBe(true);
    }
    const bad = ["telegram:abc", "whatsapp:+1555", "slack:c0ffee", "telegram:", "discord:-5", "x"];
    for (const to of [...bad, "telegram:1 "]) expect(pattern.test(to), to).toBe(false);
  });

  it.each([
    [
      ["--format", "xml"],
      `airlock: --format xml is not openai or mcp; usage: ${TOOL_SCHEMA_USAGE}`,
    ],
    [["--format="], `airlock: --format needs openai or mcp; usage: ${TOOL_SCHEMA_USAGE}`],
    [["openai"], `airlock: tool-schema takes no arguments; usage: ${TOOL_SCHEMA_USAGE}`],
  ])("refuses %j with one usage line and exit 2", async (args, line) => {
    const result = await run(["tool-schema", ...args]);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe(line);
    expect(result.stdout).toBe("");
  });

  it("answers tool-schema --help with its own help, which names the send line a host runs", async () => {
    const result = await run(["tool-schema", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout.startsWith(`Usage\n  ${TOOL_SCHEMA_USAGE}\n`)).toBe(true);
    expect(result.stdout).toContain("airlock send --json [--to=<d>]... [--caption=<c>] -- <path>");
    expect(result.stdout).toContain("--format <format>");
    // The whole page, with send's --media-tag, is `airlock --help`.
    expect(result.stdout).not.toContain("--media-tag");
    expect((await run(["--help"])).stdout).toContain("[--json] [--media-tag]");
  });
});

describe.each(RUNTIMES)("airlock send --media-tag under $name", ({ node }) => {
  const ctx = sendAgainstFakeRelay(node, () => dir);

  const urls = () => [...ctx.relay.files.values()].map((f) => f.url);

  it("prints MEDIA:<url> per file instead of the bare URL", async () => {
    const result = await ctx.send(["report.pdf", "chart.png", "--media-tag"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const [report, chart] = urls();
    expect(result.stdout).toBe(`MEDIA:${report}\nMEDIA:${chart}\n`);
    expect(report).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/[0-9a-f]+$/);
  });

  it("prints the MEDIA line before deliveries, and keeps it when a delivery fails", async () => {
    ctx.relay.setDeliveryRule((to) =>
      to === "telegram:123"
        ? { status: 502, code: "delivery_failed", message: "Bad Request: chat not found" }
        : undefined,
    );
    const result = await ctx.send([
      "report.pdf",
      "--media-tag",
      "--to",
      "telegram:123",
      "--to",
      "discord:456",
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(`MEDIA:${urls()[0]}\n`);
    expect(result.stderrLines).toEqual([
      "airlock: delivery of report.pdf to telegram:123 failed: delivery_failed: Bad Request: chat not found",
      "delivered report.pdf to discord:456 (native, sendDocument)",
    ]);
  });

  it("with --json, prints per file the MEDIA line, then the JSON line", async () => {
    const result = await ctx.send([
      "report.pdf",
      "chart.png",
      "--json",
      "--media-tag",
      "--to",
      "slack:C0FFEE",
    ]);
    expect(result.code).toBe(0);
    const lines = result.stdout.replace(/\n$/, "").split("\n");
    expect(lines).toHaveLength(4);
    const [report, chart] = urls();
    expect(lines[0]).toBe(`MEDIA:${report}`);
    expect(lines[2]).toBe(`MEDIA:${chart}`);
    const sent = [lines[1], lines[3]].map((line) => JSON.parse(line!) as Sent);
    expect(sent.map((s) => [s.name, s.url])).toEqual([
      ["report.pdf", report],
      ["chart.png", chart],
    ]);
    expect(sent.map((s) => s.deliveries.map((d) => d.status))).toEqual([
      ["delivered"],
      ["delivered"],
    ]);
  });

  it("runs send_file as the docs map it, whatever the caption and path start with", async () => {
    // docs/agent-integration.md: options as --name=value, the path after `--`.
    const args = { path: "-odd name.txt", caption: "--json -- sure?", to: ["telegram:-100123"] };
    const result = await ctx.send([
      "--json",
      ...args.to.map((to) => `--to=${to}`),
      `--caption=${args.caption}`,
      "--",
      args.path,
    ]);
    expect(result.code).toBe(0);
    const sent = JSON.parse(result.stdout) as Sent;
    expect(sent.name).toBe("-odd name.txt");
    expect(sent.url).toBe(urls()[0]);
    expect(sent.deliveries).toEqual([
      expect.objectContaining({ to: "telegram:-100123", status: "delivered" }),
    ]);
    const delivery = ctx.relay.calls.find((c) => c.path.endsWith("/deliveries"));
    expect(delivery?.json).toEqual({ to: "telegram:-100123", caption: "--json -- sure?" });
  });
});
