/**
 * `npm run bench:large` (= `node scripts/run-ts.mjs bench/large-send.bench.ts [options]`): large
 * files of random bytes sent by `airlock send` against the floor, one `curl -T` of the whole file
 * to the signed PUT the relay hands out, and against `curl --parallel` of the same part PUTs.
 *
 * `--backend s3` (default): the relay under `wrangler dev` on the s3 backend, pointed at the strict
 * S3 server on loopback (test/fixtures/s3): every byte goes straight to the store. `--backend r2`:
 * the local R2 binding, every byte through the Worker. `--sizes 128,1024` (MiB), `--runs 3`,
 * `--concurrency auto` (AIRLOCK_UPLOAD_CONCURRENCY: `auto` leaves it unset, so the shim sends
 * one part at a time unless the first runs slow; a number sets it; several, comma-separated,
 * to compare). `--shim python` runs the Python shim (agent-shim/airlock.py) instead of the built
 * Node one; a path runs that build (`.py`: under python3); several, comma-separated, run in turn.
 * `--content text` sends generated log text instead of random bytes (stored as gzip: fewer bytes
 * go up than the file holds).
 *
 * Tools run interleaved on fresh content each time, and the relay and store start afresh after
 * each upload so that no read-back or stored bytes weigh on the next one. Prints a markdown table
 * (medians, ratios against `curl -T` of the same run); exits 1 if the shim misses the target.
 */
import { loadavg, tmpdir } from "node:os";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { curlParts, curlPut } from "./baselines";
import { createFile, type BenchFile, type Kind } from "./corpus";
import { formatMs, formatRatio, formatSize, MiB } from "./format";
import { LargeRelay, type Backend } from "./large-relay";
import { sendBySteps, type Steps } from "./large-steps";
import { median, Meter } from "./measure";
import type { Session } from "./relay-api";
import { PYTHON_SHIM, SHIM, assertShimBuilt, installedShim, shimEnv, type SendJson } from "./shim";
import type { StoreTap } from "./store-tap";

/** `airlock send` on s3 must take at most this multiple of one `curl -T` of the same file. */
const S3_TARGET = 1.35;
/** On s3, the first part PUT's first byte must reach the store this soon after the spawn. */
const FIRST_BYTE_TARGET_MS = 50;
const CURL_PARTS_IN_FLIGHT = 4;

const USAGE =
  "usage: npm run bench:large -- [--backend s3|r2] [--sizes 128,1024] [--runs 3] [--concurrency auto,4] [--steps] [--shim node|python|<airlock.mjs>|<airlock.py>,...] [--content random|text]";

interface Options {
  backend: Backend;
  sizesMiB: number[];
  runs: number;
  /** AIRLOCK_UPLOAD_CONCURRENCY values to run; undefined: left unset (the shim's default). */
  levels: (number | undefined)[];
  /** Also the shim's steps done by hand, each timed (`--steps`). */
  steps: boolean;
  /** The shims to run (`--shim`): the built Node one unless others are compared. */
  shims: string[];
  content: Kind;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      backend: { type: "string", default: "s3" },
      sizes: { type: "string", default: "128,1024" },
      runs: { type: "string", default: "3" },
      concurrency: { type: "string", default: "auto" },
      steps: { type: "boolean", default: false },
      shim: { type: "string", default: "node" },
      content: { type: "string", default: "random" },
    },
  });
  const list = (raw: string) => raw.split(",").map(Number);
  const backend = values.backend;
  if (backend !== "s3" && backend !== "r2") throw new Error(USAGE);
  const content = values.content;
  if (content !== "random" && content !== "text") throw new Error(USAGE);
  const parsed = {
    backend,
    sizesMiB: list(values.sizes),
    runs: Number(values.runs),
    levels: values.concurrency.split(",").map((l) => (l === "auto" ? undefined : Number(l))),
    steps: values.steps,
    content,
    shims: values.shim.split(",").map((s) => ({ node: SHIM, python: PYTHON_SHIM })[s] ?? s),
  } satisfies Options;
  const numbers = [...parsed.sizesMiB, parsed.runs, ...parsed.levels.map((l) => l ?? 1)];
  if (!numbers.every((n) => Number.isInteger(n) && n > 0)) throw new Error(USAGE);
  return parsed;
}

/** Wall times of one tool on one size, one per run. */
interface Series {
  tool: string;
  wallMs: number[];
  rssMiB: number[];
  /** airlock on s3: ms from the spawn to the store seeing the first part PUT's first byte. */
  firstByteMs?: number[];
}

async function main(): Promise<void> {
  const opts = options();
  await assertShimBuilt();
  const work = await mkdtemp(join(tmpdir(), "airlock-large-bench-"));
  const meter = new Meter(work);
  const relay = new LargeRelay(opts.backend);
  const load = { before: loadavg()[0]!, after: NaN };
  const log = (message: string) => process.stderr.write(`[large] ${message}\n`);
  const warnings: string[] = [];
  const warn = (message: string) => {
    warnings.push(message);
    log(`warning: ${message}`);
  };
  const tables: string[] = [];
  const sends = opts.shims.flatMap((shim) => opts.levels.map((level) => ({ shim, level })));
  const stepRows: string[] = [];
  let missed = false;
  try {
    // The built Node shim runs as the README installs it (`airlock`, loaded as CommonJS).
    const installed = await installedShim(work);
    for (const sizeMiB of opts.sizesMiB) {
      log(`writing ${sizeMiB} MiB of ${opts.content}`);
      const file = await createFile(work, opts.content, sizeMiB * MiB);
      const steps: Steps[] = [];
      const series: Series[] = [
        { tool: "curl -T (one signed PUT)", wallMs: [], rssMiB: [] },
        {
          tool: `curl --parallel (part PUTs, ${CURL_PARTS_IN_FLIGHT} in flight)`,
          wallMs: [],
          rssMiB: [],
        },
        ...sends.map(({ shim, level }) => ({
          tool: `airlock send${shimLabel(shim)} (AIRLOCK_UPLOAD_CONCURRENCY=${level ?? "unset"})`,
          wallMs: [] as number[],
          rssMiB: [] as number[],
          firstByteMs: [] as number[],
        })),
      ];
      const measure = async (
        run: number,
        index: number,
        what: (session: Session) => Promise<Measure>,
      ) => {
        const { tool } = series[index]!;
        log(`${sizeMiB} MiB, run ${run}/${opts.runs}: ${tool}`);
        await file.fresh();
        const result = await what(await relay.fresh()).catch((error: unknown) => {
          throw new Error(`${tool}: ${String(error).slice(0, 400)}`);
        });
        series[index]!.wallMs.push(result.wallMs);
        series[index]!.rssMiB.push(result.rssMiB);
        if (result.firstByteMs !== undefined) series[index]!.firstByteMs?.push(result.firstByteMs);
        const first =
          result.firstByteMs === undefined
            ? ""
            : `, first part byte ${formatMs(result.firstByteMs)}`;
        log(`  ${formatMs(result.wallMs)}${first}`);
      };
      for (let run = 1; run <= opts.runs; run++) {
        await measure(run, 0, (session) =>
          curlPut(meter, session, file.path, "application/octet-stream", warn),
        );
        await measure(run, 1, (session) =>
          curlParts(meter, session, file.path, work, CURL_PARTS_IN_FLIGHT, warn),
        );
        for (const [i, { shim, level }] of sends.entries()) {
          await measure(run, 2 + i, (session) =>
            sendFresh(meter, {
              session,
              shim: shim === SHIM ? installed : shim,
              file,
              tmpDir: work,
              level,
              tap: relay.tap,
            }),
          );
        }
        if (opts.steps) {
          log(`${sizeMiB} MiB, run ${run}/${opts.runs}: the shim's steps by hand`);
          await file.fresh();
          const session = await relay.fresh();
          steps.push(await sendBySteps(meter, session, file.path, work, CURL_PARTS_IN_FLIGHT));
        }
      }
      if (steps.length > 0) {
        const sendMs = median(series[2]!.wallMs);
        stepRows.push(stepsRow(sizeMiB, steps, sendMs, median(series[0]!.wallMs)));
      }
      await file.remove();
      const floor = median(series[0]!.wallMs);
      tables.push(...series.map((s) => row(opts.backend, sizeMiB, s, floor)));
      if (opts.backend === "s3") {
        for (const s of series.slice(2)) {
          const ratio = median(s.wallMs) / floor;
          if (ratio > S3_TARGET) {
            missed = true;
            warn(`${sizeMiB} MiB ${s.tool}: ${formatRatio(ratio)} of curl -T, over ${S3_TARGET}×`);
          }
          const firstByte = median(s.firstByteMs ?? []);
          if (firstByte > FIRST_BYTE_TARGET_MS) {
            missed = true;
            warn(
              `${sizeMiB} MiB ${s.tool}: first part byte after ${formatMs(firstByte)}, over ${FIRST_BYTE_TARGET_MS} ms`,
            );
          }
        }
      }
    }
  } finally {
    await relay.stop();
    await rm(work, { recursive: true, force: true });
    load.after = loadavg()[0]!;
  }
  const where =
    opts.backend === "s3"
      ? "s3 backend, strict S3 server on loopback (parts straight to the store)"
      : "r2 backend, local R2 binding (every byte through the Worker)";
  console.log(
    [
      `Large sends of ${opts.content}, ${where}; ${new Date().toISOString()}; ${opts.runs} runs each, fresh content every run${opts.shims.some((s) => s !== SHIM) ? `; shims ${opts.shims.join(", ")}` : ""}; load average ${load.before.toFixed(1)} before, ${load.after.toFixed(1)} after`,
      "",
      "| backend | size | tool | runs (s) | median | × curl -T | peak RSS (MiB) | first part byte (ms from spawn, runs) |",
      "| --- | --- | --- | --- | --- | --- | --- | --- |",
      ...tables,
      ...(stepRows.length > 0
        ? [
            "",
            `The shim's steps by hand (medians; first pass = a fresh node process hashing the file whole, a worker per part; part PUTs by curl --parallel, ${CURL_PARTS_IN_FLIGHT} in flight):`,
            "",
            "| size | first pass | probe + declare | part PUTs | complete | sum (median of the runs' sums) | airlock send (median) | first pass + part PUTs × curl -T |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
            ...stepRows,
          ]
        : []),
      ...(warnings.length > 0 ? ["", ...warnings.map((w) => `- ${w}`)] : []),
    ].join("\n"),
  );
  if (missed) process.exitCode = 1;
}

type Measure = { wallMs: number; rssMiB: number; firstByteMs?: number };

/** `airlock send --json` of fresh content, as an agent runs it; every byte must go up. */
async function sendFresh(
  meter: Meter,
  job: {
    session: Session;
    shim: string;
    file: BenchFile;
    tmpDir: string;
    level: number | undefined;
    tap: StoreTap | undefined;
  },
): Promise<Measure> {
  const env = shimEnv(
    job.session,
    job.tmpDir,
    job.level === undefined ? {} : { AIRLOCK_UPLOAD_CONCURRENCY: String(job.level) },
  );
  job.tap?.reset();
  const spawned = performance.now();
  const python = job.shim.endsWith(".py");
  const program = python ? "python3" : process.execPath;
  const run = await meter.run(program, [job.shim, "send", job.file.path, "--json"], { env });
  const firstPartAt = job.tap?.firstPartAt;
  const result = JSON.parse(run.stdout.trim().split("\n").pop()!) as SendJson;
  const { file } = job;
  const { size } = file;
  // Text goes up as gzip: fewer bytes than the file holds, but some.
  const uploaded = result.uploadedBytes;
  const all = file.kind === "text" ? uploaded > 0 && uploaded < size : uploaded === size;
  if (result.deduped || result.size !== size || !all)
    throw new Error(`not a fresh upload of every byte: ${JSON.stringify(result)}`);
  return { ...run, firstByteMs: firstPartAt === undefined ? undefined : firstPartAt - spawned };
}

/**
 * The steps' medians, and a floor under any sender of fresh content: the digest pass the
 * declaration needs (dedup asks with the whole SHA-256, each part URL is signed with its
 * part's) followed by curl's own part PUTs, against one `curl -T` of the file.
 */
function stepsRow(sizeMiB: number, steps: Steps[], sendMs: number, curlMs: number): string {
  const of = (pick: (s: Steps) => number) => median(steps.map(pick));
  const sum = of((s) => s.hash + s.declare + s.put + s.complete);
  const floor = of((s) => s.hash + s.put);
  const cells = [
    formatSize(sizeMiB * MiB),
    ...[of((s) => s.hash), of((s) => s.declare), of((s) => s.put), of((s) => s.complete), sum].map(
      formatMs,
    ),
    formatMs(sendMs),
    `${formatMs(floor)} (${formatRatio(floor / curlMs)})`,
  ];
  return `| ${cells.join(" | ")} |`;
}

/** How a shim is named in the table: the built Node one unnamed. */
function shimLabel(shim: string): string {
  if (shim === SHIM) return "";
  return shim === PYTHON_SHIM ? " (python)" : ` (${shim})`;
}

function row(backend: Backend, sizeMiB: number, s: Series, floorMs: number): string {
  const wall = median(s.wallMs);
  return [
    "",
    backend,
    formatSize(sizeMiB * MiB),
    s.tool,
    s.wallMs.map((ms) => (ms / 1000).toFixed(2)).join(", "),
    formatMs(wall),
    formatRatio(wall / floorMs),
    Math.max(...s.rssMiB).toFixed(0),
    s.firstByteMs && s.firstByteMs.length > 0
      ? `${formatMs(median(s.firstByteMs))} (${s.firstByteMs.map((ms) => ms.toFixed(0)).join(", ")})`
      : "",
    "",
  ]
    .join(" | ")
    .trim();
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});
