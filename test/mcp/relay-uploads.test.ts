import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FileRecord } from "../../src/wire-types";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { gzip, logText, randomBytes } from "../support/bytes";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { callTool, curl, mcpClient, sha256 } from "./relay-support";

/**
 * The single-use upload URLs of `create_upload` under the ways a terminal can PUT: streamed
 * without a length, gzip with or without a declared size, the wrong length, bytes that are not
 * gzip, two PUTs racing. A refused PUT stores nothing and leaves the URL usable.
 */
/** The test relays' largest file: small, so a body over it is cheap to send. */
const MAX_FILE_BYTES = 2_000_000;

describe.each(["r2", "s3"] as const)("create_upload URLs (%s)", (storage) => {
  let s3: StrictS3 | undefined;
  let relay: RunningRelay;
  let dir: string;
  let client: Client;

  beforeAll(async () => {
    if (storage === "s3") s3 = await startStrictS3();
    const vars = { MAX_FILE_BYTES: String(MAX_FILE_BYTES), ...(s3 ? s3Vars(s3) : {}) };
    relay = await startRelay({ storage, vars });
    dir = await mkdtemp(join(tmpdir(), "airlock-mcp-uploads-"));
    client = await mcpClient(relay, (await relay.mintSession()).token);
  });
  afterAll(async () => {
    await client?.close();
    await relay?.stop();
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function uploadUrl(name: string, size?: number): Promise<string> {
    const created = await callTool(client, "create_upload", { name, ...(size ? { size } : {}) });
    return (created.structuredContent as { url: string }).url;
  }

  async function fileNames(): Promise<string[]> {
    const listed = await callTool(client, "list_files");
    return (listed.structuredContent as { files: FileRecord[] }).files.map((file) => file.name);
  }

  async function put(file: string, url: string, ...extra: string[]) {
    const answer = await curl(["--fail-with-body", "-sS", "-T", file, ...extra, url], dir);
    return { code: answer.code, body: JSON.parse(answer.stdout) as Record<string, unknown> };
  }

  async function sharedBytes(record: FileRecord): Promise<string> {
    return sha256(new Uint8Array(await (await fetch(record.url)).arrayBuffer()));
  }

  it("stores a body streamed without a length (curl -T - from a pipe)", async () => {
    const bytes = randomBytes(1024 * 1024 + 123);
    await writeFile(join(dir, "piped.bin"), bytes);
    const url = await uploadUrl("piped.bin");
    const answer = await curl(["--fail-with-body", "-sS", "-T", "-", url], dir, "piped.bin");
    expect(answer.code, answer.stdout).toBe(0);
    const record = JSON.parse(answer.stdout) as FileRecord;
    expect(record).toMatchObject({ name: "piped.bin", size: bytes.length, sha256: sha256(bytes) });
    expect(await sharedBytes(record)).toBe(sha256(bytes));
  });

  it("inflates a gzip body whose size was not declared", async () => {
    const text = logText(5000);
    await writeFile(join(dir, "notes.txt.gz"), await gzip(text));
    const answer = await put(
      "notes.txt.gz",
      await uploadUrl("notes.txt"),
      "-H",
      "Content-Encoding: gzip",
    );
    expect(answer.code).toBe(0);
    const record = answer.body as unknown as FileRecord;
    expect(record).toMatchObject({ name: "notes.txt", size: text.length, sha256: sha256(text) });
    expect(await sharedBytes(record)).toBe(sha256(text));
  });

  it("refuses bodies that are not what the URL was made for, keeps nothing, stays usable", async () => {
    await writeFile(join(dir, "1001.bin"), randomBytes(1001));
    await writeFile(join(dir, "200.gz"), await gzip(randomBytes(200)));
    await writeFile(join(dir, "plain.bin"), randomBytes(500));
    const url = await uploadUrl("exact.bin", 100);
    const refusals: [string, string[], object][] = [
      [
        "1001.bin",
        [],
        {
          code: "length_mismatch",
          message: "the body is 1001 bytes; this upload URL was made for 100",
        },
      ],
      [
        "200.gz",
        ["-H", "Content-Encoding: gzip"],
        {
          code: "length_mismatch",
          message: "the inflated file is longer than the declared 100 bytes; nothing was kept",
        },
      ],
      [
        "plain.bin",
        ["-H", "Content-Encoding: gzip"],
        {
          code: "invalid_request",
          message: "the body is not valid gzip (or broke off); nothing was kept",
        },
      ],
      [
        "plain.bin",
        ["-H", "Content-Encoding: br"],
        { code: "invalid_request", message: "Content-Encoding must be gzip, or absent" },
      ],
    ];
    for (const [file, extra, error] of refusals) {
      expect(await put(file, url, ...extra), file).toEqual({ code: 22, body: { error } });
    }
    expect(await fileNames()).not.toContain("exact.bin");

    const bytes = randomBytes(100);
    await writeFile(join(dir, "100.bin"), bytes);
    const stored = await put("100.bin", url);
    expect(stored).toMatchObject({ code: 0, body: { name: "exact.bin", sha256: sha256(bytes) } });
  });

  // A chunked body over it is cut off as it runs past (test/routes/mcp-uploads.test.ts): under
  // wrangler dev, the Worker restarts after answering a chunked body early (PUT /u/ alike).
  it("refuses a file whose length is over MAX_FILE_BYTES before reading it", async () => {
    await writeFile(join(dir, "huge.bin"), randomBytes(MAX_FILE_BYTES + 500_000));
    const url = await uploadUrl("huge.bin");
    expect(await put("huge.bin", url)).toEqual({
      code: 22,
      body: {
        error: {
          code: "file_too_large",
          message: "file is 2.4 MiB; the relay takes files up to 1.9 MiB",
        },
      },
    });
    expect(await fileNames()).not.toContain("huge.bin");
  });

  it("takes exactly one file when three PUTs race for the same URL", async () => {
    const url = await uploadUrl("raced.bin");
    const names = ["a.bin", "b.bin", "c.bin"];
    for (const name of names) await writeFile(join(dir, name), randomBytes(400_000));
    const answers = await Promise.all(names.map((name) => put(name, url)));
    const codes = answers.map((answer) => answer.body.error ?? "stored");
    expect(codes.filter((code) => code === "stored")).toHaveLength(1);
    expect(codes.filter((code) => code !== "stored")).toEqual([
      { code: "upload_already_completed", message: "this upload URL has already been used" },
      { code: "upload_already_completed", message: "this upload URL has already been used" },
    ]);
    expect((await fileNames()).filter((name) => name === "raced.bin")).toHaveLength(1);
  });
});
