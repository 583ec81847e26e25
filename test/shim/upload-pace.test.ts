import { setImmediate as yielded, setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { eachPart, type PartsJob } from "../../agent-shim/src/upload/multipart-upload";

// How many parts a multipart upload streams at once (`eachPart`): with AIRLOCK_UPLOAD_CONCURRENCY
// unset, one part's bytes at a time while the first runs fast, the next part following once the
// last one's bytes are out (not once it is answered); four streaming at once once the first runs
// under 16 MiB/s with over a second to go; with it set, that many from the start. Each part's
// bytes go through the upload's own progress meter, as a part PUT's do, at a pace set here.

const KiB = 1024;
const MiB = 1024 * KiB;
const PARTS = 8;

function job(adaptive: boolean): PartsJob {
  return {
    path: "unused",
    storedSize: PARTS * MiB,
    partSize: MiB,
    partSha256: Array.from({ length: PARTS }, () => ""),
    label: "paced.bin",
    policy: { attempts: 1, baseMs: 0, capMs: 0 },
    concurrency: 4,
    adaptive,
  };
}

/** Runs the upload with each part's bytes going in 64 KiB chunks every `pauseMs` (0: each turn). */
async function paced(adaptive: boolean, pauseMs: number) {
  let streaming = 0;
  let unanswered = 0;
  const most = { streaming: 0, unanswered: 0 };
  const started: number[] = [];
  const uploaded = await eachPart(
    Array.from({ length: PARTS }, (_, i) => i + 1),
    job(adaptive),
    async (index, progress, _signal, sent) => {
      started.push(index);
      streaming++;
      unanswered++;
      most.streaming = Math.max(most.streaming, streaming);
      most.unanswered = Math.max(most.unanswered, unanswered);
      const meter = progress.meter();
      meter.resume();
      for (let at = 0; at < MiB; at += 64 * KiB) {
        meter.write(Buffer.alloc(64 * KiB));
        await (pauseMs > 0 ? sleep(pauseMs) : yielded());
      }
      meter.end();
      streaming--;
      sent();
      await sleep(20); // The store's answer, after the last byte.
      unanswered--;
    },
  );
  return { uploaded, started, most };
}

describe("parts streaming at once in a multipart upload", () => {
  it("unset, keeps a fast upload to one part's bytes at a time, the next not waiting for answers", async () => {
    const { uploaded, started, most } = await paced(true, 0);
    expect(uploaded).toBe(PARTS * MiB);
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(most.streaming).toBe(1);
    expect(most.unanswered).toBeGreaterThan(1);
    expect(most.unanswered).toBeLessThanOrEqual(4);
  });

  it("unset, streams four parts at once when the first goes at about 3 MiB/s", async () => {
    const { uploaded, most } = await paced(true, 20);
    expect(uploaded).toBe(PARTS * MiB);
    expect(most.streaming).toBe(4);
  });

  it("with AIRLOCK_UPLOAD_CONCURRENCY=4, streams four at once from the start", async () => {
    const { started, most } = await paced(false, 0);
    expect(started.slice(0, 4)).toEqual([0, 1, 2, 3]);
    expect(most.streaming).toBe(4);
  });
});
