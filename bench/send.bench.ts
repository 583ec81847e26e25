/**
 * `npm run bench` (= `node scripts/run-ts.mjs bench/send.bench.ts [--quick] [--out <file>]`):
 * airlock send vs curl vs base64 over exec on a local relay (wrangler dev, local R2). Prints a
 * markdown report to stdout; a full run also writes it to bench/results.md (or to --out).
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { MULTIPART_THRESHOLD_BYTES } from "../src/part-plan";
import { startRelay, type RunningRelay } from "../test/support/relay";
import { complete, declareUpload, waitUntilVerified, type Session } from "./relay-api";
import { CHILD_FLAG, transferByExec } from "./base64-exec";
import type { Context } from "./context";
import { MiB, formatMs } from "./format";
import { Meter } from "./measure";
import { measureAll } from "./plan";
import { renderReport } from "./report";
import { assertShimBuilt } from "./shim";
import { renderStartup, smallFiles, unchangedResend } from "./small-files";
import { evaluateTargets } from "./targets";

const RESULTS = fileURLToPath(new URL("./results.md", import.meta.url));
const USAGE = "usage: npm run bench -- [--quick] [--only startup] [--out <file.md>]";
const OPTIONS = {
  quick: { type: "boolean" },
  /** `startup`: only the small-file sends and the unchanged 1 GiB re-send. */
  only: { type: "string" },
  out: { type: "string" },
  help: { type: "boolean" },
} as const;

/**
 * A fresh `wrangler dev` is slow on its first requests (the Worker compiles, D1 and R2 open):
 * a few small uploads first, so that whatever is measured next meets a warm relay.
 */
async function warmUp(session: Session): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const bytes = randomBytes(256 * 1024);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    const file = {
      name: "warm-up.bin",
      size: bytes.length,
      sha256,
      contentType: "application/octet-stream",
    };
    const { uploadId, put } = await declareUpload(session, file);
    const response = await fetch(put.url, {
      method: put.method,
      headers: put.headers,
      body: bytes,
    });
    if (!response.ok) throw new Error(`warm-up PUT: ${response.status}`);
    await complete(session, uploadId);
  }
}

async function main(): Promise<void> {
  let values: { quick?: boolean; only?: string; out?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ options: OPTIONS }));
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : error}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (values.help) return console.log(USAGE);
  if (values.only !== undefined && values.only !== "startup") {
    console.error(`--only takes startup, not ${values.only}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const quick = values.quick === true;
  const out = values.out ?? (quick ? undefined : RESULTS);
  const startedAt = new Date();
  const loadAtStart = loadavg()[0]!;
  await assertShimBuilt();

  const work = await mkdtemp(join(tmpdir(), "airlock-bench-"));
  let relay: RunningRelay | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await relay?.stop().catch(() => {});
      await rm(work, { recursive: true, force: true });
    })());
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ] as const) {
    process.once(signal, () => void cleanup().finally(() => process.exit(code)));
  }

  const warnings: string[] = [];
  const log = (message: string) =>
    process.stderr.write(`[bench ${formatMs(Date.now() - startedAt.getTime())}] ${message}\n`);
  try {
    log("starting the relay (wrangler dev, local R2 + D1)");
    const session = { url: "", token: "" };
    const freshRelay = async () => {
      await relay?.stop();
      relay = await startRelay({ vars: { MAX_FILE_BYTES: String(2 * 1024 * MiB) } });
      // Settling adds a dedup-hit file per upload: room for a few hundred GiB.
      const minted = await relay.mintSession({ ttlSeconds: 86_400, quotaBytes: 1024 ** 4 });
      Object.assign(session, { url: relay.url, token: minted.token });
      await warmUp(session);
    };
    await freshRelay();
    const warn = (message: string) => {
      warnings.push(message);
      log(`warning: ${message}`);
    };
    let scopes = 0;
    const ctx: Context = {
      meter: new Meter(work),
      session,
      async newScope() {
        const owner = `bench-scope-${++scopes}`;
        const minted = await relay!.mintSession({
          owner,
          ttlSeconds: 86_400,
          quotaBytes: 1024 ** 4,
        });
        return { url: relay!.url, token: minted.token };
      },
      tmpDir: work,
      log,
      warn,
      async settle(sent, options = {}) {
        if (sent.deduped) return;
        if ((sent.size <= MULTIPART_THRESHOLD_BYTES || options.keepRelay) && sent.sha256) {
          const probe = { name: "settle.bin", size: sent.size, sha256: sent.sha256 };
          const file = { ...probe, contentType: "application/octet-stream" };
          if (!(await waitUntilVerified(session, file, 15 * 60_000)))
            warn(`the relay had not verified ${sent.sha256.slice(0, 12)}… after 15 minutes`);
          return;
        }
        // Above 64 MiB (parts, read back whole): a fresh relay, a few seconds, rather than
        // waiting for the read-back; it also keeps the local R2's state small.
        log("restarting the relay (a multipart read-back is still running)");
        await freshRelay();
      },
    };
    const runs = quick ? 1 : 3;
    const startup = async () => {
      const measured = [
        await smallFiles(ctx, quick ? 3 : 7),
        await unchangedResend(ctx, quick ? 3 : 7),
      ];
      const loads = loadavg()
        .map((load) => load.toFixed(2))
        .join(", ");
      const taken = startedAt.toISOString().slice(0, 16).replace("T", " ");
      return `${renderStartup(measured)}\nTaken ${taken} UTC. Load average (1-min) at the start: ${loadAtStart.toFixed(2)}; at the end (1, 5, 15-min): ${loads}.\n`;
    };
    let markdown: string;
    if (values.only === "startup") {
      markdown = await startup();
    } else {
      const results = await measureAll(ctx, quick);
      const targets = evaluateTargets(results);
      const startupSection = await startup();
      const totalMs = Date.now() - startedAt.getTime();
      const run = { quick, runs, startedAt, totalMs, loadAtStart, warnings };
      markdown = `${renderReport({ ...run, ...results, targets })}\n${startupSection}`;
    }
    process.stdout.write(markdown);
    if (out && values.only === undefined) {
      await writeFile(out, markdown);
      log(`wrote ${out}`);
    }
  } finally {
    await cleanup();
  }
}

if (process.argv[2] === CHILD_FLAG) {
  transferByExec(process.argv[3]!, process.argv[4]!);
} else {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    process.exitCode = 1;
  });
}
