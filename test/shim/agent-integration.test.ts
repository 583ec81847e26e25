import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUNTIMES, failureLine, prepareShim, runShim } from "./run-shim";

// `airlock tool-schema`: what an agent host reads from the shim (docs/agent-integration.md);
// `send --media-tag` is in agent-media-tag.test.ts.

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

let dir: string;

beforeAll(async () => {
  prepareShim();
  dir = await mkdtemp(join(tmpdir(), "airlock-shim-agent-"));
  await writeFile(join(dir, "report.pdf"), `%PDF-1.4\n${randomBytes(2000).toString("hex")}\n`);
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
