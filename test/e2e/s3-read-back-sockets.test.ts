import { readdir } from "node:fs/promises";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workerdPids } from "../../bench/workerd-process";
import type { UploadAnswer } from "../../src/wire-types";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { randomBytes, sha256Hex } from "../support/bytes";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";

const MiB = 1024 * 1024;

/** Open descriptors of all of the relay's workerd processes together. */
async function workerdDescriptors(relay: RunningRelay): Promise<number> {
  let total = 0;
  for (const pid of workerdPids(relay.processGroup)) {
    total += (await readdir(`/proc/${pid}/fd`).catch(() => [])).length;
  }
  return total;
}

/**
 * The verify queue reading an upload back from S3 under `wrangler dev` (issue: workerd's
 * descriptors went from 22 to 5,728 in 12 s on a 256 MiB read-back, then "Too many open files").
 * The cause was wrangler's DevTools proxy, which posts each of workerd's `Network.dataReceived`
 * events (one per 4 KiB of a subrequest's body) to wrangler's Node process on a connection of
 * its own; `startRelay` runs without it. 12 MiB read back was about 3,000 of them.
 */
describe("reading an upload back from S3 (wrangler dev, s3)", () => {
  let s3: StrictS3;
  let relay: RunningRelay;

  beforeAll(async () => {
    s3 = await startStrictS3();
    relay = await startRelay({ storage: "s3", vars: s3Vars(s3) });
  }, 120_000);

  afterAll(async () => {
    await relay?.stop();
    await s3?.stop();
  });

  it("keeps workerd's open descriptors near where they started while the queue verifies 12 MiB", async () => {
    const { token } = await relay.mintSession();
    const call = async (path: string, json?: object) => {
      const response = await fetch(relay.url + path, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: json ? JSON.stringify(json) : null,
      });
      return { status: response.status, answer: (await response.json()) as UploadAnswer };
    };
    // Gzip of random bytes stays as large as they are: the queue reads all 12 MiB back (a file
    // declaring more than 4 MiB is verified on the queue, not in `complete`).
    const original = randomBytes(12 * MiB);
    const stored = gzipSync(original, { level: 1 });
    const declared = {
      name: "noise.bin",
      size: original.byteLength,
      sha256: await sha256Hex(original),
      contentType: "application/octet-stream",
      encoding: "gzip",
      storedSize: stored.byteLength,
      storedSha256: await sha256Hex(stored),
    };
    const { answer } = await call("/v1/uploads", declared);
    if (answer.status !== "upload") throw new Error(`expected an upload: ${answer.status}`);
    const put = await fetch(answer.put.url, {
      method: "PUT",
      headers: answer.put.headers,
      body: stored,
    });
    expect(put.status).toBe(200);

    const before = await workerdDescriptors(relay);
    let peak = before;
    const sampling = setInterval(() => {
      void workerdDescriptors(relay).then((n) => (peak = Math.max(peak, n)));
    }, 50);
    try {
      const completed = await call(`/v1/uploads/${answer.uploadId}/complete`);
      expect(completed.status).toBe(201);
      // Verified content is what the dedup probe answers with.
      const deadline = Date.now() + 60_000;
      let probe = await call("/v1/uploads", declared);
      while (probe.answer.status !== "deduped" && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        probe = await call("/v1/uploads", declared);
      }
      expect(probe.answer.status).toBe("deduped");
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      clearInterval(sampling);
    }
    const after = await workerdDescriptors(relay);
    const seen = `descriptors: ${before} before, ${peak} at most, ${after} after`;
    expect(peak - before, seen).toBeLessThan(100);
    expect(after - before, seen).toBeLessThan(50);
  }, 120_000);
});
