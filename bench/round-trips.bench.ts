/**
 * `npm run bench:rtt` (= `node scripts/run-ts.mjs bench/round-trips.bench.ts [--mib <n>]
 * [--out <file.md>]`): issue 29's "figures that carry over". The relay (`wrangler dev`, the s3
 * backend), the strict S3 store and a fake Telegram each run behind a recording TCP proxy
 * (bench/tcp-recorder.ts); the relay hands out presigned URLs for the store's proxy, so every
 * byte the shim, curl or the relay moves is seen. For each operation (small send, large send,
 * get, pull, a delivery to Telegram) and its curl baseline it derives the round trips on the
 * critical path and the bytes each stream carried (bench/critical-path.ts), then models the wall
 * time on three link profiles (bench/link-model.ts). Prints markdown; `--out` also writes it.
 * 72 MiB by default: over the 64 MiB multipart threshold, so the large send goes in parts.
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { startTelegramFake } from "../test/fixtures/platforms/telegram-fake";
import { startStrictS3 } from "../test/fixtures/s3/strict-s3";
import { startRelay } from "../test/support/relay";
import { s3Vars } from "../test/support/s3-vars";
import { curlSingleUpload, curlTo } from "./baselines";
import { createFile, type BenchFile } from "./corpus";
import { criticalPath, type Link } from "./critical-path";
import { exec, Meter } from "./measure";
import { complete, declareUpload, describe, waitUntilVerified, type Session } from "./relay-api";
import { GOALS, renderRoundTrips, type Observed } from "./rtt-report";
import { installedShim, shimEnv } from "./shim";
import { startRecordingProxy, type Exchange, type RecordingProxy } from "./tcp-recorder";

const USAGE = "usage: npm run bench:rtt -- [--mib <large size, default 72>] [--out <file.md>]";
const CHAT = "777";
const MiB = 1024 * 1024;

const { values } = parseArgs({
  options: { mib: { type: "string" }, out: { type: "string" }, help: { type: "boolean" } },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const largeMiB = Number(values.mib ?? 72);
if (!Number.isInteger(largeMiB) || largeMiB < 1 || largeMiB > 512) {
  console.error(`--mib takes a whole number of MiB from 1 to 512\n${USAGE}`);
  process.exit(2);
}
const large = `${largeMiB} MiB`;
const log = (message: string) =>
  process.stderr.write(`[bench:rtt ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
const loadStart = loadavg()[0]!;
const work = await mkdtemp(join(tmpdir(), "airlock-rtt-"));
const meter = new Meter(work);
const s3 = await startStrictS3();
const telegram = await startTelegramFake({ maxUploadBytes: 60_000_000 });
const s3Proxy = await startRecordingProxy("s3", s3.endpoint);
const tgProxy = await startRecordingProxy("telegram", telegram.url);
const relay = await startRelay({
  storage: "s3",
  vars: {
    ...s3Vars(s3, s3Proxy.url),
    MAX_FILE_BYTES: String(1024 * MiB),
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: tgProxy.url,
    TELEGRAM_WEBHOOK_SECRET: "bench",
  },
});
const relayProxy = await startRecordingProxy("relay", relay.url);
const proxies: RecordingProxy[] = [relayProxy, s3Proxy, tgProxy];
const runs: Observed[] = [];

/** Each s3 connection's link, from its first request: presigned ones are a client's. */
const s3Presigned = new Map<number, boolean>();
function linkOf(e: Exchange): Link {
  if (e.proxy === "relay") return "client";
  if (e.proxy === "telegram") return "platform";
  if (e.index === 0) s3Presigned.set(e.connection, e.presigned);
  return (s3Presigned.get(e.connection) ?? e.presigned) ? "client" : "relay-store";
}

/**
 * Waits until nothing has moved through any proxy for 3 s: the relay's queue settles a send a
 * moment after it answers, and that must not land inside the next operation's window.
 */
async function quiet(): Promise<void> {
  const deadline = performance.now() + 180_000;
  while (performance.now() < deadline) {
    const last = Math.max(...proxies.map((p) => p.lastActivity()));
    if (performance.now() - last >= 3000) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  log("warning: the proxies never went quiet for 3 s within 3 minutes");
}

/** Runs `what` (one process) and records its critical path as `tool` doing `operation`. */
async function observe(
  operation: string,
  tool: string,
  what: () => Promise<unknown>,
  options: { baseline?: string; outer?: Link } = {},
): Promise<void> {
  await quiet();
  log(`${operation}: ${tool}`);
  const started = performance.now();
  await what();
  const ended = performance.now();
  const all = proxies.flatMap((p) => p.exchanges()).sort((a, b) => a.start - b.start);
  for (const e of all) linkOf(e); // in order, so that each connection's first request names it
  const seen = all.filter((e) => e.requestStart >= started && e.requestStart <= ended);
  const path = criticalPath(seen, linkOf, options.outer, started);
  runs.push({ operation, tool, wallMs: ended - started, path, baseline: options.baseline });
}

async function sha256Of(path: string): Promise<string> {
  return (await describe(path, "application/octet-stream")).sha256;
}

try {
  const minted = await relay.mintSession({
    ttlSeconds: 86_400,
    quotaBytes: 1024 ** 4,
    destinations: [`telegram:${CHAT}`],
  });
  const direct: Session = { url: relay.url, token: minted.token };
  const proxied: Session = { url: relayProxy.url, token: minted.token };
  const shim = await installedShim(work);
  // Downloads start all four streams at once, and large sends four parts in flight: by default
  // the shim opens them only once its first range (or part) is slower than 16 MiB/s, which
  // loopback never is and the modelled long links always are.
  const env = shimEnv(proxied, work, {
    XDG_CACHE_HOME: join(work, "cache"),
    AIRLOCK_DOWNLOAD_STREAMS: "4",
    AIRLOCK_UPLOAD_CONCURRENCY: "4",
  });
  const shimRun = (...args: string[]) => meter.run(process.execPath, [shim, ...args], { env });
  const type = "application/octet-stream";
  // A fresh relay compiles on its first requests: one untimed send through every proxy first.
  const warm = await createFile(work, "random", 64 * 1024);
  await shimRun("send", warm.path, "--json");

  /** A presigned PUT for `file` declared directly (untimed), `curl -T` timed, then completed. */
  const curlPut = async (file: BenchFile, operation: string) => {
    await file.fresh();
    const { uploadId, put } = await declareUpload(direct, await describe(file.path, type));
    await observe(operation, "curl -T (presigned PUT)", () => curlTo(meter, put, file.path));
    await complete(direct, uploadId);
  };

  const small = await createFile(work, "random", 16 * 1024);
  await small.fresh();
  await observe("small send", "airlock send", () => shimRun("send", small.path, "--json"), {
    baseline: "curl, the same one request",
  });
  await small.fresh();
  await observe("small send", "curl, the same one request", () =>
    curlSingleUpload(meter, proxied, small.path, type),
  );
  await curlPut(small, "small send");

  const big = await createFile(work, "random", largeMiB * MiB);
  await curlPut(big, `send ${large}`);
  await big.fresh();
  const original = await describe(big.path, type);
  let sentFile = { fileId: "", url: "" };
  await observe(
    `send ${large}`,
    "airlock send",
    async () => {
      const run = await shimRun("send", big.path, "--json");
      sentFile = JSON.parse(run.stdout.trim().split("\n").pop()!) as typeof sentFile;
    },
    { baseline: "curl -T (presigned PUT)" },
  );
  // The relay reads a multipart upload back to verify it: wait for that before measuring more.
  if (!(await waitUntilVerified(direct, original, 15 * 60_000)))
    throw new Error("the relay did not verify the large send");

  const out = join(work, "out.bin");
  for (const operation of [`get ${large}`, `pull ${large}`]) {
    const link = new URL(sentFile.url);
    const redirect = await fetch(relay.url + link.pathname + link.search, { redirect: "manual" });
    const location = redirect.headers.get("location");
    if (redirect.status !== 307 || !location) throw new Error(`no redirect: ${redirect.status}`);
    await observe(operation, "curl -o (presigned GET)", () =>
      meter.run("curl", ["-sSf", "-o", out, location]),
    );
    if ((await sha256Of(out)) !== original.sha256) throw new Error("curl -o: bytes differ");
    await rm(out, { force: true });
  }
  await observe(`get ${large}`, "airlock get", () => shimRun("get", sentFile.fileId, "-o", out), {
    baseline: "curl -o (presigned GET)",
  });
  if ((await sha256Of(out)) !== original.sha256) throw new Error("airlock get: bytes differ");
  await rm(out, { force: true });

  const seedUrl = `${relay.url}/v1/sessions/${minted.sessionId}/inbox?name=seeded.bin`;
  const admin = `authorization: Bearer ${relay.adminToken}`;
  const seeded = await exec("curl", ["-sSf", "-X", "POST", "-T", big.path, "-H", admin, seedUrl]);
  if (seeded.code !== 0) throw new Error(`seeding the inbox: ${seeded.stderr}`);
  const inbox = join(work, "inbox");
  await mkdir(inbox);
  await observe(`pull ${large}`, "airlock pull", () => shimRun("pull", "--dir", inbox), {
    baseline: "curl -o (presigned GET)",
  });
  const pulled = await readdir(inbox);
  if (pulled.length !== 1 || (await sha256Of(join(inbox, pulled[0]!))) !== original.sha256)
    throw new Error(`airlock pull: expected the seeded file, got ${pulled.join(", ")}`);

  const doc = await createFile(work, "random", 16 * MiB);
  await doc.fresh();
  const docSha = await sha256Of(doc.path);
  const sent = await meter.run(process.execPath, [shim, "send", doc.path, "--json"], {
    env: shimEnv(direct, work),
  });
  const docId = (JSON.parse(sent.stdout.trim().split("\n").pop()!) as { fileId: string }).fileId;
  telegram.reset();
  const deliver = `${relayProxy.url}/v1/files/${docId}/deliveries`;
  await observe(
    "delivery 16 MiB to Telegram",
    "POST /v1/files/:id/deliveries (curl)",
    () =>
      meter.run("curl", [
        ...["-sSf", "-o", "/dev/null", "-X", "POST", "-H", `authorization: Bearer ${minted.token}`],
        ...[
          "-H",
          "content-type: application/json",
          "--data",
          JSON.stringify({ to: `telegram:${CHAT}` }),
        ],
        deliver,
      ]),
    { baseline: "curl -F to sendDocument" },
  );
  const [received] = telegram.requests("sendDocument");
  if (received?.files[0]?.sha256 !== docSha) throw new Error("Telegram got other bytes");
  await observe(
    "delivery 16 MiB to Telegram",
    "curl -F to sendDocument",
    () =>
      meter.run("curl", [
        ...["-sSf", "-o", "/dev/null", "-F", `chat_id=${CHAT}`, "-F", `document=@${doc.path}`],
        `${tgProxy.url}/bot${telegram.token}/sendDocument`,
      ]),
    { outer: "platform" },
  );

  const date = new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC";
  const markdown = renderRoundTrips(runs, GOALS(large), {
    date,
    loadStart,
    loadEnd: loadavg()[0]!,
    large,
  });
  process.stdout.write(markdown);
  if (values.out) await writeFile(values.out, markdown);
} catch (error) {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
} finally {
  await relay.stop();
  for (const proxy of proxies) await proxy.stop();
  await telegram.stop();
  await s3.stop();
  await rm(work, { recursive: true, force: true });
}
