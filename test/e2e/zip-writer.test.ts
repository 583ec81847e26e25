// The relay's zip writer checked by Info-ZIP's own `unzip`: what it writes is a valid zip
// (`unzip -t`), of exactly the length it predicts, and extracts to the bytes put in, with
// classic records and with ZIP64 records forced (a 4 GiB entry is out of a test's reach).
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { zipLength, zipStream, type ZipEntry } from "../../src/content/zip-writer";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** A stream of `bytes` in uneven chunks, as a store or an inflater hands them out. */
function chunked(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.byteLength) return controller.close();
      const next = Math.min(bytes.byteLength, at + 1 + Math.floor(Math.random() * 70_000));
      controller.enqueue(bytes.subarray(at, next));
      at = next;
    },
  });
}

describe("zipStream", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "airlock-zip-writer-"));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const files: Record<string, Uint8Array> = {
    "site/index.html": new TextEncoder().encode("<h1>hi</h1>\n"),
    "site/data/blob.bin": randomBytes(300_000),
    "site/data/empty.txt": new Uint8Array(0),
    "site/naïve résumé.txt": new TextEncoder().encode("UTF-8 names\n"),
  };
  const entries: ZipEntry[] = [
    { name: "site", size: 0, directory: true },
    { name: "site/data", size: 0, directory: true },
    ...Object.entries(files).map(([name, bytes]) => ({
      name,
      size: bytes.byteLength,
      directory: false,
    })),
  ];

  it.each([
    ["classic records", undefined],
    ["ZIP64 records forced", 0],
  ])("writes a zip unzip -t passes and extracts byte-exact (%s)", async (label, zip64From) => {
    const options = { zip64From, modified: new Date("2026-11-26T12:34:56Z") };
    const stream = zipStream(entries, async (entry) => chunked(files[entry.name]!), options);
    const zip = new Uint8Array(await new Response(stream).arrayBuffer());
    expect(zip.byteLength).toBe(zipLength(entries, options));
    // The ZIP64 end-of-central-directory record is there exactly when asked for.
    const end64 = Buffer.from(zip).includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]));
    expect(end64).toBe(zip64From === 0);
    const path = join(dir, `${label}.zip`);
    await writeFile(path, zip);
    const tested = execFileSync("unzip", ["-t", path], { encoding: "utf8" });
    expect(tested).toContain("No errors detected");
    const out = join(dir, `${label}-out`);
    execFileSync("unzip", ["-q", path, "-d", out]);
    for (const [name, bytes] of Object.entries(files))
      expect(sha256(await readFile(join(out, name))), name).toBe(sha256(bytes));
  });

  it("errors the zip when an entry's content is shorter than its size", async () => {
    const short = zipStream([{ name: "a.bin", size: 10, directory: false }], async () =>
      chunked(new Uint8Array(9)),
    );
    await expect(new Response(short).arrayBuffer()).rejects.toThrow("entry 0 ended at 9 of 10");
  });
});
