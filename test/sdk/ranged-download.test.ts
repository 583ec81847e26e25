import { createHash, randomFillSync } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AirlockError, AirlockSession, type FetchLike } from "../../sdk/src/node";
import { prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { rejectionOf } from "../support/rejection";
import { sharedRelay } from "../support/shared-relay";

/**
 * The TypeScript SDK's `downloadToFile` of a file over the ranged threshold (lowered by the
 * shim's knobs, which the SDK's Node entry reads too) against the real relay: six ranges of
 * 1 MiB, bytes equal by SHA-256; a range cut off mid-way is asked again for only the bytes it
 * lacked; a range whose bytes are altered on the way fails the whole download as
 * `download_mismatch`, keeping nothing.
 */

const MiB = 1024 * 1024;
const SIZE = 6 * MiB;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const KNOBS = { AIRLOCK_PARALLEL_THRESHOLD: String(MiB), AIRLOCK_DOWNLOAD_CHUNK: String(MiB) };

describe("SDK downloadToFile in ranges (shared relay, r2)", () => {
  let dir: string;
  let bytes: Buffer;
  let fileId: string;
  let token: string;
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    prepareShim();
    const relay = sharedRelay();
    dir = await mkdtemp(join(tmpdir(), "airlock-sdk-ranged-"));
    bytes = randomFillSync(Buffer.alloc(SIZE));
    await writeFile(join(dir, "big.bin"), bytes);
    token = (await relay.mintSession()).token;
    const sent = await runShim(["send", "big.bin", "--wait", "--json"], {
      cwd: dir,
      env: relayEnv(relay.url, token),
      timeoutMs: 120_000,
    });
    expect(sent.stderr, sent.stderr).toBe("");
    fileId = (JSON.parse(sent.stdout) as { fileId: string }).fileId;
    for (const [name, value] of Object.entries(KNOBS)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
  }, 120_000);

  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * A session whose fetch notes each Range asked for, and can flip a byte of one answer, or cut
   * one off after its first `cut.after` bytes (once).
   */
  const session = (corruptRange?: string, cut?: { range: string; after: number }) => {
    const ranges: string[] = [];
    const fetchImpl: FetchLike = async (input, init) => {
      const range = new Headers(init?.headers).get("range");
      if (range) ranges.push(range);
      const response = await fetch(input, init);
      if (cut !== undefined && range === cut.range && response.body) {
        const head = new Uint8Array(await response.arrayBuffer()).subarray(0, cut.after);
        cut = undefined;
        let sent = false;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent) return controller.error(new TypeError("terminated"));
            sent = true;
            controller.enqueue(head);
          },
        });
        return new Response(body, { status: response.status, headers: response.headers });
      }
      if (range !== corruptRange || !response.body) return response;
      const body = new Uint8Array(await response.arrayBuffer());
      body[100] = body[100]! ^ 0xff;
      const { status, statusText, headers } = response;
      return new Response(body, { status, statusText, headers });
    };
    const client = new AirlockSession({ url: sharedRelay().url, token, fetch: fetchImpl });
    return { client, ranges };
  };

  it("gets the bytes exactly, six ranges of 1 MiB", async () => {
    const out = await mkdtemp(join(dir, "out-"));
    const { client, ranges } = session();
    await client.downloadToFile(fileId, join(out, "big.bin"));
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    expect(ranges.sort()).toEqual(
      Array.from({ length: 6 }, (_, i) => `bytes=${i * MiB}-${(i + 1) * MiB - 1}`).sort(),
    );
    expect(await readdir(out)).toEqual(["big.bin"]);
  });

  it("asks again only for the bytes a cut range lacked", async () => {
    const out = await mkdtemp(join(dir, "cut-"));
    const range = `bytes=${MiB}-${2 * MiB - 1}`;
    const { client, ranges } = session(undefined, { range, after: 600 * 1024 });
    await client.downloadToFile(fileId, join(out, "big.bin"));
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    expect(ranges.filter((r) => r.endsWith(`-${2 * MiB - 1}`))).toEqual([
      range,
      `bytes=${MiB + 600 * 1024}-${2 * MiB - 1}`,
    ]);
  });

  it("refuses a download one of whose ranges was altered, keeping nothing", async () => {
    const out = await mkdtemp(join(dir, "corrupt-"));
    const { client } = session(`bytes=${2 * MiB}-${3 * MiB - 1}`);
    const error = await rejectionOf<AirlockError>(
      client.downloadToFile(fileId, join(out, "big.bin")),
    );
    expect(error).toBeInstanceOf(AirlockError);
    expect(error.code).toBe("download_mismatch");
    expect(await readdir(out)).toEqual([]);
  });
});
