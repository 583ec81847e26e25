/**
 * `npm run build:shim && node scripts/run-ts.mjs bench/gzip-cpu.bench.ts [--size 512]
 * [--env K=V,K=V] [--shim <path>] [--curl]`: where the CPU of one gzip
 * `airlock send` of generated text goes on the s3 backend (issue 29 §2). Reads the CPU seconds
 * (user + system) of every process taking part before and after the send: the shim (GNU time),
 * the relay (`wrangler dev` and its workerd, from /proc), and this process, which runs the store
 * (the tap, the strict S3 proxy and s3rver). On a machine of `cores` cores no schedule can end
 * before (all CPU) / cores: the floor the send is held against. `--curl` does the same for one
 * `curl -T` of the raw bytes; `--shim` runs another build of the shim (an older one, say).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { curlPut } from "./baselines";
import { createFile } from "./corpus";
import { MiB } from "./format";
import { LargeRelay } from "./large-relay";
import { Meter, type Measured } from "./measure";
import { SHIM, assertShimBuilt, shimEnv } from "./shim";
import { cpuMs } from "./workerd-process";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "512" },
    env: { type: "string", default: "" },
    shim: { type: "string", default: SHIM },
    curl: { type: "boolean", default: false },
  },
});

/** CPU milliseconds of the relay's processes (wrangler's group) and of this process (the store). */
async function cpuNow(group: number): Promise<{ relay: number; store: number }> {
  const pids = execFileSync("ps", ["-o", "pid=", "-g", String(group)], { encoding: "utf8" })
    .split("\n")
    .map((l) => Number(l.trim()))
    .filter((pid) => pid > 0);
  let relay = 0;
  for (const pid of pids) relay += await cpuMs(pid).catch(() => 0);
  const { user, system } = process.cpuUsage();
  return { relay, store: (user + system) / 1000 };
}

async function measured(
  relay: LargeRelay,
  what: string,
  run: () => Promise<Measured & { shimCpuMs?: number }>,
) {
  const group = relay.processGroup;
  const before = await cpuNow(group);
  const result = await run();
  const after = await cpuNow(group);
  const relayMs = after.relay - before.relay;
  const storeMs = after.store - before.store;
  const shimMs = result.shimCpuMs ?? 0;
  const all = relayMs + storeMs + shimMs;
  const cores = cpus().length;
  const s = (ms: number) => (ms / 1000).toFixed(2);
  console.log(
    `${what}: wall ${s(result.wallMs)} s, peak RSS ${result.rssMiB.toFixed(0)} MiB; CPU s: ` +
      `client ${s(shimMs)}, relay ${s(relayMs)}, store ${s(storeMs)}, all ${s(all)}; ` +
      `floor on ${cores} cores ${s(all / cores)} s; load ${loadavg()[0]!.toFixed(1)}`,
  );
}

async function main(): Promise<void> {
  await assertShimBuilt();
  const size = Number(values.size) * MiB;
  const work = await mkdtemp(join(tmpdir(), "airlock-gzip-cpu-"));
  const relay = new LargeRelay("s3");
  const meter = new Meter(work);
  try {
    const file = await createFile(work, "text", size);
    if (values.curl) {
      await file.fresh();
      const session = await relay.fresh();
      // curl's own CPU is not read (it is small); the relay's includes the untimed declare and complete.
      await measured(relay, "curl -T", () =>
        curlPut(meter, session, file.path, "text/plain", () => {}),
      );
    }
    await file.fresh();
    const session = await relay.fresh();
    const extra: Record<string, string> = {};
    for (const pair of values.env.split(",").filter(Boolean)) {
      const [k, v] = pair.split("=");
      extra[k!] = v ?? "";
    }
    const env = shimEnv(session, work, extra);
    await measured(relay, `airlock send ${values.env}`, async () => {
      const times = join(work, "shim-times.txt");
      const run = await meter.run(
        "/usr/bin/time",
        ["-f", "%U %S", "-o", times, process.execPath, values.shim, "send", file.path, "--json"],
        { env },
      );
      return { ...run, shimCpuMs: cpuOfChildren(times) };
    });
  } finally {
    await relay.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/** User + system seconds GNU time wrote to `file`, in milliseconds. */
function cpuOfChildren(file: string): number {
  try {
    const text = readFileSync(file, "utf8").trim().split("\n").pop()!;
    const [user, system] = text.split(" ").map(Number);
    return ((user ?? 0) + (system ?? 0)) * 1000;
  } catch {
    return 0;
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});
