/**
 * `node scripts/run-ts.mjs bench/send-timeline.bench.ts [--mib 128] [--runs 1] [--shim <path>]
 * [--prof <dir>]`:
 * one `airlock send` of fresh random bytes on the s3 backend, with recording proxies in front of
 * the relay and the strict S3 server, printed as a timeline (ms from the spawn): every request to
 * the relay and to the store, when it started, when its answer began, when it ended, and the gaps
 * between part PUTs. It shows what comes before the first part's first byte and where a large
 * send's time goes between parts; `npm run bench:large` is what measures the targets.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { startStrictS3 } from "../test/fixtures/s3/strict-s3";
import { startRelay } from "../test/support/relay";
import { s3Vars } from "../test/support/s3-vars";
import { createFile } from "./corpus";
import { MiB } from "./format";
import { SHIM, assertShimBuilt, shimEnv } from "./shim";
import { startRecordingProxy, type Exchange } from "./tcp-recorder";

const { values } = parseArgs({
  options: {
    mib: { type: "string", default: "128" },
    runs: { type: "string", default: "1" },
    shim: { type: "string", default: SHIM },
    /** A directory for the shim's CPU profile (`node --cpu-prof`), one per run. */
    prof: { type: "string" },
  },
});

async function main(): Promise<void> {
  await assertShimBuilt();
  const work = await mkdtemp(join(tmpdir(), "airlock-timeline-"));
  const file = await createFile(work, "random", Number(values.mib) * MiB);
  const s3 = await startStrictS3();
  const storeProxy = await startRecordingProxy("s3", s3.endpoint);
  const relay = await startRelay({
    storage: "s3",
    vars: { MAX_FILE_BYTES: String(4 * 1024 ** 3), ...s3Vars(s3, storeProxy.url) },
  });
  const relayProxy = await startRecordingProxy("relay", relay.url);
  try {
    const { token } = await relay.mintSession({ ttlSeconds: 86_400, quotaBytes: 1024 ** 4 });
    const warm = await fetch(`${relay.url}/v1/files`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await warm.arrayBuffer();
    for (let run = 1; run <= Number(values.runs); run++) {
      await file.fresh();
      relayProxy.clear();
      storeProxy.clear();
      const session = { url: relayProxy.url, token };
      const load = loadavg()[0]!.toFixed(1);
      // Node's own start, beside it: the floor under anything the shim does before its first byte.
      const bare: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t = performance.now();
        await runNode(["-e", "0"], process.env);
        bare.push(performance.now() - t);
      }
      const spawned = performance.now();
      const prof = values.prof ? ["--cpu-prof", `--cpu-prof-dir=${values.prof}`] : [];
      const exited = await runNode(
        [...prof, values.shim, "send", file.path, "--json"],
        shimEnv(session, work),
      );
      const wall = performance.now() - spawned;
      const all = [...relayProxy.exchanges(), ...storeProxy.exchanges()].sort(
        (a, b) => a.requestStart - b.requestStart,
      );
      console.log(
        `\nrun ${run}: ${values.mib} MiB, exit ${exited.code}, wall ${wall.toFixed(0)} ms, load ${load}; ` +
          `\`node -e 0\` ${bare.map((ms) => ms.toFixed(0)).join(", ")} ms`,
      );
      if (exited.code !== 0) console.log(exited.stderr.slice(0, 2000));
      console.log("| who | conn | request | start | answer | end | up |");
      console.log("| --- | --- | --- | --- | --- | --- | --- |");
      for (const e of all) console.log(line(e, spawned));
      gaps(storeProxy.exchanges(), spawned);
    }
  } finally {
    await relayProxy.stop();
    await relay.stop();
    await storeProxy.stop();
    await s3.stop();
    await rm(work, { recursive: true, force: true });
  }
}

function line(e: Exchange, t0: number): string {
  const ms = (t: number) => (Number.isNaN(t) ? "-" : (t - t0).toFixed(1));
  const up = e.bytesUp > MiB ? `${(e.bytesUp / MiB).toFixed(1)} MiB` : `${e.bytesUp} B`;
  return `| ${e.proxy} | ${e.connection}${e.index === 0 ? "*" : ""} | ${e.line}${e.presigned ? " (signed)" : ""} | ${ms(e.requestStart)} | ${ms(e.firstResponseByte)} | ${ms(e.end)} | ${up} |`;
}

/** Part PUTs: how long each took, and how long the store saw no part going up at all. */
function gaps(store: Exchange[], t0: number): void {
  const puts = store.filter((e) => e.presigned && e.line.startsWith("PUT"));
  if (puts.length === 0) return;
  const spans = puts.map((e) => [e.requestStart, e.end] as const).sort((a, b) => a[0] - b[0]);
  let idle = 0;
  let reach = spans[0]![1];
  for (const [start, end] of spans.slice(1)) {
    if (start > reach) idle += start - reach;
    reach = Math.max(reach, end);
  }
  const first = spans[0]![0] - t0;
  const last = reach - t0;
  const mean = puts.reduce((sum, e) => sum + (e.end - e.requestStart), 0) / puts.length;
  // Per connection: the time from one PUT's answer to the next PUT on it (a slot left idle).
  let slotIdle = 0;
  const byConnection = new Map<number, Exchange[]>();
  for (const e of puts)
    byConnection.set(e.connection, [...(byConnection.get(e.connection) ?? []), e]);
  for (const list of byConnection.values()) {
    for (let i = 1; i < list.length; i++) slotIdle += list[i]!.requestStart - list[i - 1]!.end;
  }
  console.log(
    `\npart PUTs: ${puts.length}, first byte ${first.toFixed(0)} ms, last end ${last.toFixed(0)} ms, ` +
      `mean PUT ${mean.toFixed(0)} ms, store idle between parts ${idle.toFixed(0)} ms, ` +
      `connections idle between their PUTs ${slotIdle.toFixed(0)} ms in all`,
  );
}

/** `node <args>` to its exit, with its stderr. */
function runNode(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stderr }));
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});
