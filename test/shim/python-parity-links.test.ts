// The Python shim's `send --expires / --max-downloads` and `request` against the real relay
// (`wrangler dev`), held to the Node shim's lines, fields and exit codes.
import { randomBytes } from "node:crypto";
import { readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { failureLine } from "./run-shim";
import {
  download,
  MiB,
  node,
  python,
  run,
  secondsUntil,
  sendStdinBoth,
  session,
  sha256,
  useParitySuite,
} from "./python-parity-support";

useParitySuite("airlock-python-parity-");

describe("the Python shim's send --expires / --max-downloads", () => {
  it("prints a link that serves once under --max-downloads 1, its expiry in --json", async () => {
    const bytes = randomBytes(40_000);
    const args = ["--expires", "2h", "--max-downloads", "1"];
    const { fromNode, fromPython } = await sendStdinBoth(bytes, "once.bin", args);
    for (const sent of [fromNode, fromPython]) {
      expect(sent.sha256).toBe(sha256(bytes));
      // The link lives two hours; the file the relay's FILE_TTL_SECONDS (7 days by default).
      expect(secondsUntil(sent.expiresAt)).toBeGreaterThan(2 * 3600 - 300);
      expect(secondsUntil(sent.expiresAt)).toBeLessThanOrEqual(2 * 3600);
      expect(secondsUntil(sent.fileExpiresAt)).toBeGreaterThan(6 * 86400);
      expect(sha256(await download(sent.url))).toBe(sha256(bytes));
      const second = await fetch(sent.url);
      expect(second.status).toBe(410);
      expect(((await second.json()) as { error: { code: string } }).error.code).toBe(
        "link_exhausted",
      );
    }
  });

  it("prints the minted link as the bare URL without --json", async () => {
    const at = await session();
    const bytes = randomBytes(3000);
    await writeFile(join(at.cwd, "plain.bin"), bytes);
    const result = await run(python, ["send", "plain.bin", "--max-downloads", "1"], at);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+\n$/);
    const url = result.stdout.trim();
    expect(sha256(await download(url))).toBe(sha256(bytes));
    expect((await fetch(url)).status).toBe(410);
  });
});

interface UploadRequest {
  requestId: string;
  url: string;
  name: string | null;
  maxBytes: number;
  expiresAt: string;
}

describe("the Python shim's request", () => {
  it("prints an upload link a PUT fills, and pull then writes the bytes", async () => {
    const at = await session();
    const result = await run(python, ["request"], at);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/u\/[A-Za-z0-9_-]{43}\n$/);
    expect(result.stderr).toBe(
      `from a terminal: curl --fail-with-body -T <file> ${result.stdout.trim()}/\n`,
    );
    const bytes = randomBytes(70_000);
    const put = await fetch(`${result.stdout.trim()}?name=answer.bin`, {
      method: "PUT",
      body: bytes,
    });
    expect(put.status).toBe(201);
    expect(await put.json()).toEqual({
      name: "answer.bin",
      size: bytes.length,
      sha256: sha256(bytes),
    });
    const dir = join(at.cwd, "inbox");
    const pulled = await run(python, ["pull", "--dir", dir], at);
    expect(pulled.stderr).toBe("");
    expect(pulled.code).toBe(0);
    expect(await readdir(dir)).toEqual(["answer.bin"]);
    expect(sha256(await readFile(join(dir, "answer.bin")))).toBe(sha256(bytes));
  });

  it("--json: the Node shim's fields, with --name, --max-bytes and --expires sent", async () => {
    const args = [
      "request",
      "--name",
      "invoice.pdf",
      "--max-bytes",
      "1M",
      "--expires",
      "1h",
      "--json",
    ];
    const created: UploadRequest[] = [];
    for (const driver of [node, python]) {
      const result = await run(driver, args, await session());
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout.endsWith("\n")).toBe(true);
      expect(result.stdout.trim().split("\n")).toHaveLength(1);
      created.push(JSON.parse(result.stdout) as UploadRequest);
    }
    const [fromNode, fromPython] = created as [UploadRequest, UploadRequest];
    expect(Object.keys(fromPython)).toEqual(Object.keys(fromNode));
    expect(Object.keys(fromPython).sort()).toEqual(
      ["expiresAt", "maxBytes", "name", "requestId", "url"].sort(),
    );
    expect(fromPython).toMatchObject({ name: "invoice.pdf", maxBytes: MiB });
    expect(secondsUntil(fromPython.expiresAt)).toBeGreaterThan(3600 - 300);
    expect(secondsUntil(fromPython.expiresAt)).toBeLessThanOrEqual(3600);
    // The link takes no more than --max-bytes.
    const over = await fetch(fromPython.url, { method: "PUT", body: randomBytes(MiB + 1) });
    expect(over.status).toBe(413);
  });

  it.each([
    [["request", "extra"], /^airlock: request takes no arguments; usage: /],
    [["request", "--max-bytes", "lots"], /^airlock: --max-bytes needs a positive number/],
    [["request", "--expires", "soon"], /^airlock: --expires soon is not a duration/],
    [["request", "--bogus"], /^airlock: unknown option '--bogus'; usage: /],
  ])("refuses %j with the Node shim's line and exit 2", async (args, line) => {
    const at = await session();
    const [fromNode, fromPython] = [await run(node, args, at), await run(python, args, at)];
    for (const result of [fromNode, fromPython]) {
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
    }
    expect(failureLine(fromNode)).toMatch(line);
    expect(failureLine(fromPython)).toBe(failureLine(fromNode));
  });
});
