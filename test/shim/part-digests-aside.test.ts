import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  WORKER_SOURCE,
  digestFilePartsAside,
} from "../../agent-shim/src/upload/part-digests-aside";
import { PartDigests } from "../../agent-shim/src/upload/part-digests";
import { RUNTIMES } from "./run-shim";
import { shimScratchDir } from "./scratch-dir";
import { processEnv } from "./shims";

// The part digests a send takes on a worker thread match the ones the streaming pass takes.
describe("digestFilePartsAside", () => {
  const scratch = shimScratchDir("airlock-part-digests-");

  const PART = 64 * 1024;
  it.each([0, 1, PART - 1, PART, PART + 1, 3 * PART, 2 * 1024 * 1024 + 17])(
    "a %i-byte file: the same digests as the streaming pass",
    async (size) => {
      const bytes = randomBytes(size);
      const path = join(scratch(), `file-${size}.bin`);
      await writeFile(path, bytes);
      const streamed = new PartDigests(PART);
      // Uneven pieces, as a stream hands them over.
      for (let at = 0; at < size; at += 5000) streamed.update(bytes.subarray(at, at + 5000));
      const expected = streamed.finish();
      expect(expected).toHaveLength(Math.max(1, Math.ceil(size / PART)));
      await expect(digestFilePartsAside(path, PART).digests).resolves.toEqual(expected);
    },
  );

  // The fallback would hide a worker that cannot run: the worker's own source is run here.
  it.each(RUNTIMES)("the worker's source runs by itself under $name", async ({ node }) => {
    const bytes = randomBytes(3 * PART + 5);
    const path = join(scratch(), "worker.bin");
    await writeFile(path, bytes);
    const script =
      'const { Worker } = require("node:worker_threads");' +
      "new Worker(process.env.SOURCE, { eval: true, workerData: JSON.parse(process.env.DATA) })" +
      '.once("message", (found) => console.log(JSON.stringify(found)));';
    const out = execFileSync(node, ["-e", script], {
      env: processEnv({ SOURCE: WORKER_SOURCE, DATA: JSON.stringify({ path, partSize: PART }) }),
      encoding: "utf8",
    });
    const streamed = new PartDigests(PART);
    streamed.update(bytes);
    expect(JSON.parse(out)).toEqual(streamed.finish());
  });

  it("names a file it cannot read as the other passes do", async () => {
    const missing = join(scratch(), "missing.bin");
    await expect(digestFilePartsAside(missing, PART).digests).rejects.toThrow(
      `cannot read ${missing}`,
    );
  });

  it("stops when asked, leaving nothing unhandled", async () => {
    const path = join(scratch(), "stopped.bin");
    await writeFile(path, randomBytes(4 * 1024 * 1024));
    const aside = digestFilePartsAside(path, PART);
    aside.stop();
    await expect(aside.digests).rejects.toThrow("the part digest thread was stopped");
  });
});
