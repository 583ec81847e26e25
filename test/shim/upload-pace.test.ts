import { execFile } from "node:child_process";
import { setImmediate as yielded, setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { eachPart, type PartsJob } from "../../agent-shim/src/upload/multipart-upload";
import { prepareShim } from "./run-shim";
import { processEnv, PYTHON_SHIM } from "./shims";

// How many parts a multipart upload streams at once (the Node shim's `eachPart`, the Python
// shim's `each_part`): with AIRLOCK_UPLOAD_CONCURRENCY unset, one part's bytes at a time while
// the first runs fast, the next part following once the last one's bytes are out (not once it
// is answered); four streaming at once once the first runs under 16 MiB/s with over a second to
// go; with it set, that many from the start. Each part's bytes are told to the upload as a part
// PUT's are (Node: its progress meter; Python: its stream's `moved`), at a pace set here.

const KiB = 1024;
const MiB = 1024 * KiB;
const PARTS = 8;

interface Paced {
  uploaded: number;
  started: number[];
  most: { streaming: number; unanswered: number };
}

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
async function pacedNode(adaptive: boolean, pauseMs: number): Promise<Paced> {
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

/** The same upload through the Python shim's each_part, in threads (pauseMs 0: 1 ms). */
const PYTHON_PACED = `import importlib.util, json, sys, threading, time
spec = importlib.util.spec_from_file_location("airlock_shim", sys.argv[1])
shim = importlib.util.module_from_spec(spec)
spec.loader.exec_module(shim)
adaptive, pause = sys.argv[2] == "true", max(int(sys.argv[3]), 1) / 1000
PARTS, MiB, KiB = ${PARTS}, ${MiB}, ${KiB}
lock = threading.Lock()
now = {"streaming": 0, "unanswered": 0}
most = {"streaming": 0, "unanswered": 0}
started = []

def send(index, stream):
    with lock:
        started.append(index)
        for key in now:
            now[key] += 1
            most[key] = max(most[key], now[key])
    for _ in range(0, MiB, 64 * KiB):
        stream.moved(64 * KiB)
        time.sleep(pause)
    with lock:
        now["streaming"] -= 1
    stream.sent()
    time.sleep(0.02)  # the store's answer, after the last byte
    with lock:
        now["unanswered"] -= 1
    return MiB

uploaded = shim.each_part(4, list(range(PARTS)), send, threading.Event(), adaptive, PARTS * MiB)
print(json.dumps({"uploaded": uploaded, "started": started, "most": most}))`;

async function pacedPython(adaptive: boolean, pauseMs: number): Promise<Paced> {
  const args = ["-c", PYTHON_PACED, PYTHON_SHIM, String(adaptive), String(pauseMs)];
  const env = processEnv({ PATH: process.env.PATH ?? "/usr/bin:/bin" });
  const { stdout } = await promisify(execFile)("python3", args, { env });
  return JSON.parse(stdout) as Paced;
}

describe.each([
  ["node", pacedNode],
  ["python", pacedPython],
] as const)("%s shim: parts streaming at once in a multipart upload", (shim, paced) => {
  beforeAll(() => {
    if (shim === "python") prepareShim();
  });

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
    const { uploaded, started, most } = await paced(false, 0);
    expect(uploaded).toBe(PARTS * MiB);
    // Threads may start in any order: the first four are parts 0-3.
    expect([...started.slice(0, 4)].sort()).toEqual([0, 1, 2, 3]);
    expect(most.streaming).toBe(4);
  });
});
