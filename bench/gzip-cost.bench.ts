// What a request costs the relay when the stored bytes inflate to far more than it serves
// (issue 24 §1). `npm run bench:gzip [-- --requests N]`. Runs wrangler dev (workerd, r2) and
// measures workerd's CPU time (/proc utime + stime) and peak-RSS growth (VmHWM after a reset)
// over N sequential requests of each kind:
//   - a 10-byte Range (`bytes=-10`) and a page view of a 1 GiB text file stored as tabled gzip
//     (1 MiB members, built here with node:zlib), against the same requests on a 1 MiB file
//     stored as it is (the baseline; target: within 2x);
//   - the same page view of the 1 GiB file stored as one untabled gzip member (the lazy head);
//   - the listing of a 1 GiB tar.gz bomb on the verify queue, with /healthz probed meanwhile
//     (target: p99 during it <= 5x its idle p99).
import { createHash } from "node:crypto";
import { createGzip, gzipSync } from "node:zlib";
import { apiCall } from "../test/support/api-call";
import { startRelay, type RunningRelay } from "../test/support/relay";
import { gzipBomb } from "../test/support/tar-bomb";
import { cpuMs, resetPeak, statusKiB, workerdPids } from "./workerd-process";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
/** The value after `--<name>` on the command line, else `fallback`. */
function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
}
const REQUESTS = option("requests", 20);
/** The big text's size in MiB (1024: the issue's 1 GiB). */
const BIG_MIB = option("mib", 1024);
const step = (what: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${what}`);

/** Original member i of the 1 GiB text: log lines, one 4 KiB pattern repeated, numbered. */
function textMember(i: number): Buffer {
  const lines: string[] = [];
  for (let n = 0; lines.join("").length < 4096; n++) {
    lines.push(
      `2026-11-26T10:00:${String(n % 60).padStart(2, "0")}Z INFO worker[${n % 7}] item ${n}\n`,
    );
  }
  const pattern = Buffer.from(lines.join("").slice(0, 4096));
  const member = Buffer.alloc(MiB);
  for (let offset = 0; offset < MiB; offset += pattern.byteLength) pattern.copy(member, offset);
  member.write(`member ${i} `, 0);
  return member;
}

/** The 1 GiB text as tabled gzip (and as one untabled member), with the declares' fields. */
async function bigText() {
  const sha = createHash("sha256");
  const members: Buffer[] = [];
  const whole = createGzip({ level: 6 });
  const untabled: Buffer[] = [];
  whole.on("data", (chunk: Buffer) => untabled.push(chunk));
  const ended = new Promise((resolve) => whole.on("end", resolve));
  for (let i = 0; i < BIG_MIB; i++) {
    const member = textMember(i);
    sha.update(member);
    members.push(gzipSync(member));
    if (!whole.write(member)) await new Promise((resolve) => whole.once("drain", resolve));
  }
  whole.end();
  await ended;
  const tabled = Buffer.concat(members);
  const single = Buffer.concat(untabled);
  const fields = { size: BIG_MIB * MiB, sha256: sha.digest("hex"), encoding: "gzip" };
  const storedFields = (stored: Buffer) => ({
    storedSize: stored.byteLength,
    storedSha256: createHash("sha256").update(stored).digest("hex"),
  });
  return {
    tabled: {
      stored: tabled,
      declared: {
        ...fields,
        ...storedFields(tabled),
        members: { span: MiB, storedSizes: members.map((m) => m.byteLength) },
      },
    },
    untabled: { stored: single, declared: { ...fields, ...storedFields(single) } },
  };
}

async function send(
  relay: RunningRelay,
  token: string,
  declared: Record<string, unknown>,
  stored: Buffer,
): Promise<{ fileId: string; url: string }> {
  const answer = await apiCall(relay.url, token, "POST", "/v1/uploads", declared);
  if (answer.status !== 201) throw new Error(`declare: ${JSON.stringify(answer.body)}`);
  const { put, uploadId } = answer.body as {
    put: { url: string; headers: Record<string, string> };
    uploadId: string;
  };
  const putAnswer = await fetch(put.url, { method: "PUT", headers: put.headers, body: stored });
  if (!putAnswer.ok) throw new Error(`PUT: ${putAnswer.status} ${await putAnswer.text()}`);
  step(`PUT ${stored.byteLength} bytes; completing`);
  const done = await Promise.race([
    apiCall(relay.url, token, "POST", `/v1/uploads/${uploadId}/complete`),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error("complete took over 2 minutes")), 120_000),
    ),
  ]);
  if (done.status !== 201) throw new Error(`complete: ${JSON.stringify(done.body)}`);
  const file = done.body as { fileId: string; url: string };
  for (let i = 0; i < 600; i++) {
    // Each poll gives up after 10 s: under wrangler dev, a request that arrives while the
    // queue verifies a long upload can be left unanswered ; the next poll asks again.
    const meta = await fetch(`${relay.url}/v1/files/${file.fileId}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    }).catch(() => null);
    const body = meta ? ((await meta.json()) as { status?: string }) : null;
    if (body?.status === "verified") return file;
    if (meta && meta.status !== 200) throw new Error(`${file.fileId}: ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`${file.fileId} was not verified`);
}

interface Cost {
  cpuMsPerRequest: number;
  peakGrowthMiB: number;
}

/** workerd's CPU per request and peak-RSS growth over `REQUESTS` sequential requests. */
async function measure(pids: number[], request: () => Promise<void>): Promise<Cost> {
  await request(); // warm
  for (const pid of pids) await resetPeak(pid);
  const rssBefore = await Promise.all(pids.map((pid) => statusKiB(pid, "VmRSS")));
  const cpuBefore = await Promise.all(pids.map(cpuMs));
  for (let i = 0; i < REQUESTS; i++) await request();
  const cpuAfter = await Promise.all(pids.map(cpuMs));
  const peaks = await Promise.all(pids.map((pid) => statusKiB(pid, "VmHWM")));
  const cpu = cpuAfter.reduce((sum, ms, i) => sum + ms - cpuBefore[i]!, 0);
  const growth = Math.max(...peaks.map((peak, i) => peak - rssBefore[i]!));
  return { cpuMsPerRequest: cpu / REQUESTS, peakGrowthMiB: growth / 1024 };
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!;
}

/** One /healthz round trip in ms; one unanswered after 10 s counts as 10,000 ms. */
async function healthzMs(relay: RunningRelay): Promise<number> {
  const started = performance.now();
  try {
    const answer = await fetch(`${relay.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
    await answer.arrayBuffer();
  } catch {
    return 10_000;
  }
  return performance.now() - started;
}

step(`building the ${BIG_MIB} MiB text (tabled and untabled gzip) and the bomb`);
const built = await bigText();
const bomb = await gzipBomb();
const relay = await startRelay();
try {
  // One owner per stored form: the same content in one scope would be a dedup hit.
  const { token } = await relay.mintSession({ quotaBytes: 4 * GiB, owner: "bench-a" });
  const other = (await relay.mintSession({ quotaBytes: 4 * GiB, owner: "bench-b" })).token;
  const small = textMember(0).subarray(0, MiB);
  const smallSha = createHash("sha256").update(small).digest("hex");
  const identity = await send(
    relay,
    token,
    {
      name: "small.log",
      size: MiB,
      sha256: smallSha,
      contentType: "text/plain",
      encoding: "identity",
      storedSize: MiB,
      storedSha256: smallSha,
    },
    small,
  );
  step("sent the 1 MiB identity file");
  const text = { contentType: "text/plain" };
  const tabled = await send(
    relay,
    token,
    { name: "big.log", ...text, ...built.tabled.declared },
    built.tabled.stored,
  );
  step("sent the tabled big text");
  const untabled = await send(
    relay,
    other,
    { name: "old.log", ...text, ...built.untabled.declared },
    built.untabled.stored,
  );
  step("sent the untabled big text");
  const pids = workerdPids(relay.processGroup);

  const range = (url: string) => async () => {
    const answer = await fetch(url, { headers: { range: "bytes=-10" } });
    const body = await answer.arrayBuffer();
    if (answer.status !== 206 || body.byteLength !== 10) throw new Error(`range: ${answer.status}`);
  };
  const page = (url: string) => async () => {
    const answer = await fetch(url, { headers: { accept: BROWSER } });
    const html = await answer.text();
    if (answer.status !== 200 || !html.includes("member 0"))
      throw new Error(`page: ${answer.status}`);
  };
  const rows: [string, Cost, Cost | null][] = [];
  const big = `${BIG_MIB >= 1024 ? `${BIG_MIB / 1024} GiB` : `${BIG_MIB} MiB`}`;
  const baseRange = await measure(pids, range(identity.url));
  const basePage = await measure(pids, page(identity.url));
  rows.push(["10-byte Range, 1 MiB identity (baseline)", baseRange, null]);
  rows.push([
    `10-byte Range, ${big} tabled gzip`,
    await measure(pids, range(tabled.url)),
    baseRange,
  ]);
  rows.push(["page view, 1 MiB identity (baseline)", basePage, null]);
  rows.push([`page view, ${big} tabled gzip`, await measure(pids, page(tabled.url)), basePage]);
  rows.push([`page view, ${big} untabled gzip`, await measure(pids, page(untabled.url)), basePage]);

  step("measured ranges and pages");
  // /healthz idle, then while the bomb's listing runs on the verify queue.
  const idle: number[] = [];
  for (let i = 0; i < 200; i++) idle.push(await healthzMs(relay));
  const bombSha = createHash("sha256").update(bomb).digest("hex");
  for (const pid of pids) await resetPeak(pid);
  const rssBefore = await Promise.all(pids.map((pid) => statusKiB(pid, "VmRSS")));
  const cpuBefore = await Promise.all(pids.map(cpuMs));
  const during: number[] = [];
  const started = performance.now();
  step("sending the bomb; probing /healthz until it is listed");
  const sent = send(
    relay,
    token,
    {
      name: "bomb.tar.gz",
      size: bomb.byteLength,
      sha256: bombSha,
      contentType: "application/gzip",
      encoding: "identity",
      storedSize: bomb.byteLength,
      storedSha256: bombSha,
    },
    bomb,
  );
  let listed: string | undefined;
  while (!listed && performance.now() - started < 120_000) {
    during.push(await healthzMs(relay));
    // A probe every ~10 ms, not a flood. Miniflare's local queue does not restart its batch
    // timer per request (docs/testing.md, "The local queue"), so the rate does not hold it back.
    await new Promise((resolve) => setTimeout(resolve, 10));
    listed = relay
      .output()
      .split("\n")
      .find((line) => line.includes('"archive_listed"') && line.includes('"stopped"'));
  }
  await sent;
  const listingMs = performance.now() - started;
  const cpu = (await Promise.all(pids.map(cpuMs))).reduce(
    (sum, ms, i) => sum + ms - cpuBefore[i]!,
    0,
  );
  const peaks = await Promise.all(pids.map((pid) => statusKiB(pid, "VmHWM")));
  const growth = Math.max(...peaks.map((peak, i) => peak - rssBefore[i]!)) / 1024;

  const table = [
    `| request (${REQUESTS} each, sequential) | workerd CPU per request (ms) | ratio to baseline | peak RSS growth (MiB) |`,
    "| --- | --- | --- | --- |",
    ...rows.map(
      ([name, cost, base]) =>
        `| ${name} | ${cost.cpuMsPerRequest.toFixed(1)} | ${base ? (cost.cpuMsPerRequest / Math.max(base.cpuMsPerRequest, 0.5)).toFixed(2) + "x" : "1x"} | ${cost.peakGrowthMiB.toFixed(1)} |`,
    ),
  ];
  console.log(
    `stored: ${big} text as ${built.tabled.stored.byteLength} bytes tabled (${BIG_MIB} members), ${built.untabled.stored.byteLength} untabled`,
  );
  console.log(table.join("\n"));
  console.log(
    `\nbomb listing (1 GiB tar.gz, ${bomb.byteLength} bytes): ${listed?.slice(listed.indexOf("{")) ?? "not listed"}\n` +
      `  upload to listed: ${listingMs.toFixed(0)} ms wall, workerd CPU ${cpu} ms, peak RSS growth ${growth.toFixed(1)} MiB\n` +
      `  /healthz p99: idle ${p99(idle).toFixed(1)} ms (${idle.length} probes), during ${p99(during).toFixed(1)} ms (${during.length} probes): ${(p99(during) / p99(idle)).toFixed(2)}x`,
  );
} catch (error) {
  console.error(relay.output().slice(-4000));
  throw error;
} finally {
  await relay.stop();
}
