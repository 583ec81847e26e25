import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolsFor } from "../../src/mcp/tool-definitions";
import type { FileRecord } from "../../src/wire-types";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { gzip, logText, randomBytes } from "../support/bytes";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { sharedRelay } from "../support/shared-relay";
import { callTool, curl, itemsOf, mcpClient, seed, sha256, textOf } from "./relay-support";

/**
 * `POST /mcp` driven by the official MCP client over streamable HTTP, against the relay as it
 * runs (`wrangler dev`) on both stores, with the real curl doing what a model's terminal does.
 */
describe.each(["r2", "s3"] as const)("POST /mcp tools (%s)", (storage) => {
  let s3: StrictS3 | undefined;
  let relay: RunningRelay;
  let dir: string;
  let session: { sessionId: string; token: string };
  let client: Client;

  beforeAll(async () => {
    // r2 with default settings is the run's shared relay; s3 needs a store of its own.
    if (storage === "s3") s3 = await startStrictS3();
    relay = s3 ? await startRelay({ storage, vars: s3Vars(s3) }) : sharedRelay();
    dir = await mkdtemp(join(tmpdir(), "airlock-mcp-relay-"));
    session = await relay.mintSession();
    client = await mcpClient(relay, session.token);
  });
  afterAll(async () => {
    await client?.close();
    await relay?.stop();
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("lists exactly the relay's tools from the shared definitions", async () => {
    const { tools } = await client.listTools();
    expect(tools).toEqual(toolsFor("relay"));
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      "create_upload",
      "deliver_file",
      "list_files",
      "receive_files",
      "remove_file",
      "request_file",
      "share_link",
    ]);
  });

  it("create_upload gives a URL curl -T stores once; its answer's share link fetches the bytes", async () => {
    const bytes = randomBytes(300_000);
    await writeFile(join(dir, "report.bin"), bytes);
    const created = await callTool(client, "create_upload", { name: "report.bin" });
    expect(created.isError).toBeFalsy();
    const { url, command } = created.structuredContent as { url: string; command: string };
    expect(command).toBe(`curl --fail-with-body -sS -T report.bin '${url}'`);

    const put = await curl(["--fail-with-body", "-sS", "-T", "report.bin", url], dir);
    expect(put.stderr).toBe("");
    expect(put.code).toBe(0);
    const record = JSON.parse(put.stdout) as FileRecord;
    expect(record).toMatchObject({ name: "report.bin", size: bytes.length, sha256: sha256(bytes) });
    const shared = new Uint8Array(await (await fetch(record.url)).arrayBuffer());
    expect(sha256(shared)).toBe(sha256(bytes));

    const again = await curl(["--fail-with-body", "-sS", "-T", "report.bin", url], dir);
    expect(again.code).toBe(22);
    expect(JSON.parse(again.stdout)).toEqual({
      error: { code: "upload_already_completed", message: "this upload URL has already been used" },
    });
    const listed = await callTool(client, "list_files");
    const files = (listed.structuredContent as { files: FileRecord[] }).files;
    expect(files.filter((file) => file.name === "report.bin")).toHaveLength(1);
  });

  it("create_upload takes a gzip body, stores the file it inflates to", async () => {
    const text = logText(20_000);
    await writeFile(join(dir, "log.txt.gz"), await gzip(text));
    const created = await callTool(client, "create_upload", { name: "log.txt", size: text.length });
    const { url } = created.structuredContent as { url: string };
    const put = await curl(
      ["--fail-with-body", "-sS", "-T", "log.txt.gz", "-H", "Content-Encoding: gzip", url],
      dir,
    );
    expect(put.code, put.stdout).toBe(0);
    const record = JSON.parse(put.stdout) as FileRecord;
    expect(record).toMatchObject({ name: "log.txt", size: text.length, sha256: sha256(text) });
    const shared = new Uint8Array(await (await fetch(record.url)).arrayBuffer());
    expect(sha256(shared)).toBe(sha256(text));
  });

  it("receive_files hands out a URL curl -o fetches byte-exact, then the item is acknowledged", async () => {
    const bytes = randomBytes(200_000);
    await seed(relay, session.sessionId, "data set.csv", bytes);
    const [item, ...rest] = itemsOf(await callTool(client, "receive_files"));
    expect(rest).toEqual([]);
    expect(item).toMatchObject({ name: "data set.csv", size: bytes.length, sha256: sha256(bytes) });

    const got = await curl(["--fail-with-body", "-sS", "-o", "got.csv", item!.downloadUrl], dir);
    expect(got.code, got.stderr).toBe(0);
    expect(sha256(await readFile(join(dir, "got.csv")))).toBe(sha256(bytes));
    // The acknowledgement lands as the last byte goes out: a moment after curl has it.
    await expect.poll(async () => itemsOf(await callTool(client, "receive_files"))).toEqual([]);
  });

  it("a download cut short leaves the item in the inbox", async () => {
    const bytes = randomBytes(100_000);
    await seed(relay, session.sessionId, "half.bin", bytes);
    const [item] = itemsOf(await callTool(client, "receive_files"));
    const ranged = await fetch(item!.downloadUrl, { headers: { range: "bytes=0-999" } });
    expect(ranged.status).toBe(206);
    expect((await ranged.arrayBuffer()).byteLength).toBe(1000);
    const [still] = itemsOf(await callTool(client, "receive_files"));
    expect(still?.itemId).toBe(item!.itemId);
    // The rest (`curl -C -`) runs to the last byte: that finishes it.
    const rest = await fetch(item!.downloadUrl, { headers: { range: "bytes=1000-" } });
    expect(sha256(new Uint8Array(await rest.arrayBuffer()))).toBe(sha256(bytes.subarray(1000)));
    await expect.poll(async () => itemsOf(await callTool(client, "receive_files"))).toEqual([]);
  });

  it("another session's token neither sees nor removes this session's files", async () => {
    const bytes = randomBytes(50_000);
    await writeFile(join(dir, "mine.bin"), bytes);
    const { url } = (await callTool(client, "create_upload", { name: "mine.bin" }))
      .structuredContent as { url: string };
    const record = JSON.parse(
      (await curl(["-sS", "-T", "mine.bin", url], dir)).stdout,
    ) as FileRecord;

    const other = await relay.mintSession();
    const stranger = await mcpClient(relay, other.token);
    try {
      const listed = await callTool(stranger, "list_files");
      expect((listed.structuredContent as { files: unknown[] }).files).toEqual([]);
      const removed = await callTool(stranger, "remove_file", { file_id: record.fileId });
      expect(removed.isError).toBe(true);
      expect(textOf(removed)).toBe(
        `relay refused deleting file ${record.fileId}: file_not_found: no such file`,
      );
      const linked = await callTool(stranger, "share_link", { file_id: record.fileId });
      expect(textOf(linked)).toBe(
        `relay refused a new link to file ${record.fileId}: file_not_found: no such file`,
      );
    } finally {
      await stranger.close();
    }
    const shared = new Uint8Array(await (await fetch(record.url)).arrayBuffer());
    expect(sha256(shared)).toBe(sha256(bytes));

    const removed = await callTool(client, "remove_file", { file_id: record.fileId });
    expect(textOf(removed)).toBe(`deleted ${record.fileId}`);
    expect((await fetch(record.url)).status).toBe(410);
  });

  it("refuses bad input as a tool result with one clear line", async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ["remove_file", {}, "remove_file needs file_id"],
      [
        "request_file",
        { max_bytes: 6_000_000_000 },
        "relay refused the upload link request: invalid_request: max_bytes: must be at most " +
          "5368709120 (MAX_FILE_BYTES, the largest file this relay takes)",
      ],
      [
        "create_upload",
        { name: "x.bin", path: "x.bin" },
        "create_upload has no argument path; it takes only name, size",
      ],
      [
        "create_upload",
        { name: "a/b.txt" },
        "relay refused the upload URL for a/b.txt: invalid_request: name: must not contain / or \\",
      ],
      [
        "share_link",
        { file_id: "fil_nope", expires: "soon" },
        `share_link: expires "soon" does not match ^(\\d+|(\\d+[smhdw])+)$`,
      ],
      [
        "deliver_file",
        { file_id: "fil_nope", to: "telegram:1" },
        "relay refused delivery of fil_nope to telegram:1: file_not_found: no such file",
      ],
    ];
    for (const [tool, args, line] of cases) {
      const result = await callTool(client, tool, args);
      expect(result.isError, tool).toBe(true);
      expect(textOf(result)).toBe(line);
    }
    const small = await relay.mintSession({ quotaBytes: 1000 });
    const limited = await mcpClient(relay, small.token);
    try {
      const over = await callTool(limited, "create_upload", { name: "big.bin", size: 5000 });
      expect(textOf(over)).toBe(
        "relay refused the upload URL for big.bin: quota_exceeded: file is 4.9 KiB and the " +
          "session has 1000 B of its byte quota left",
      );
    } finally {
      await limited.close();
    }
  });
});
