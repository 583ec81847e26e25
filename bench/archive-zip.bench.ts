// What an archive's `?zip=1` and `?entry=N` cost the relay (issue 28 §3, under issue 24's rule:
// CPU and memory follow the bytes served). `npm run bench:zip [-- --mib M --requests N]`. Runs
// wrangler dev (workerd, r2), sends a directory of M MiB (random files: the tar.gz is as large as
// the tar) with the built shim, and measures workerd's CPU time (/proc utime + stime) and
// peak-RSS growth (VmHWM after a reset) over N sequential requests of each kind, against the
// baseline of the same requests for `?download=1` of the stored .tar.gz (streamed as it is).
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { prepareShim, relayEnv, runShim } from "../test/shim/run-shim";
import { startRelay } from "../test/support/relay";
import { cpuMs, resetPeak, statusKiB, workerdPids } from "./workerd-process";

const MiB = 1024 * 1024;
function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
}
/** The directory's size: the listing reads up to 64 MiB of tar, so zips are offered below it. */
const TOTAL_MIB = option("mib", 48);
const REQUESTS = option("requests", 5);
const BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8";

prepareShim();
const dir = await mkdtemp(join(tmpdir(), "airlock-bench-zip-"));
const relay = await startRelay();
try {
  await mkdir(join(dir, "data/parts"), { recursive: true });
  await writeFile(join(dir, "data/readme.txt"), "a small first file\n");
  for (let i = 0; i < TOTAL_MIB / 4; i++)
    await writeFile(
      join(dir, `data/parts/part-${String(i).padStart(3, "0")}.bin`),
      randomBytes(4 * MiB),
    );
  const { token } = await relay.mintSession({ quotaBytes: 4 * TOTAL_MIB * MiB });
  const sent = await runShim(["send", join(dir, "data"), "--json"], {
    env: relayEnv(relay.url, token),
  });
  if (sent.code !== 0) throw new Error(sent.stderr);
  const { url } = JSON.parse(sent.stdout) as { url: string };
  let page = "";
  for (let i = 0; i < 120 && !page.includes('href="?zip=1"'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    page = await (await fetch(url, { headers: { accept: BROWSER } })).text();
  }
  if (!page.includes('href="?zip=1"')) throw new Error("the page never offered a zip");
  const linkOf = (name: RegExp) =>
    [...page.matchAll(/href="(\?entry=\d+)" download>([^<]+)</g)]
      .filter((m) => name.test(m[2]!))
      .at(-1)![1]!;
  const lastPart = linkOf(/part-\d+\.bin$/);

  // The relay's existing inflate path, for comparison: a text file the shim stores as gzip.
  const line = "2026-11-26T10:00:00Z INFO worker item ok; nothing to report here at all\n";
  await writeFile(join(dir, "big.log"), line.repeat(Math.ceil((TOTAL_MIB * MiB) / line.length)));
  const log = await runShim(["send", join(dir, "big.log"), "--json"], {
    env: relayEnv(relay.url, token),
  });
  if (log.code !== 0) throw new Error(log.stderr);
  const logUrl = (JSON.parse(log.stdout) as { url: string }).url;

  const pids = workerdPids(relay.processGroup);
  const rows: string[] = [];
  for (const [label, target] of [
    ["?download=1 (the .tar.gz as stored: baseline)", `${url}?download=1`],
    ["?download=1 of a text file stored as gzip (inflate baseline)", `${logUrl}?download=1`],
    ["?zip=1 (inflate the tar.gz, write the zip)", `${url}?zip=1`],
    // Entries of a .tar.gz are offered alone only when they start within 8 MiB: part-001.
    [`${lastPart} (the last part offered alone: 4 MiB at 4 MiB in)`, `${url}${lastPart}`],
  ] as const) {
    for (const pid of pids) await resetPeak(pid);
    const rss = await Promise.all(pids.map((pid) => statusKiB(pid, "VmRSS")));
    const cpu = await Promise.all(pids.map(cpuMs));
    let served = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const answer = await fetch(target);
      if (answer.status !== 200) throw new Error(`${target}: ${answer.status}`);
      served += (await answer.arrayBuffer()).byteLength;
    }
    const cpuAfter = await Promise.all(pids.map(cpuMs));
    const peaks = await Promise.all(pids.map((pid) => statusKiB(pid, "VmHWM")));
    const cpuUsed = cpuAfter.reduce((a, b) => a + b, 0) - cpu.reduce((a, b) => a + b, 0);
    const growth = Math.max(...peaks.map((peak, i) => peak - rss[i]!)) / 1024;
    const perRequest = served / REQUESTS / MiB;
    rows.push(
      `| ${label} | ${perRequest.toFixed(2)} | ${(cpuUsed / REQUESTS).toFixed(0)} | ` +
        `${(cpuUsed / REQUESTS / Math.max(perRequest, 1 / 1024)).toFixed(1)} | ${growth.toFixed(1)} |`,
    );
  }
  console.log(`\n${TOTAL_MIB} MiB directory, ${REQUESTS} sequential requests each (workerd, r2)\n`);
  console.log(
    "| request | MiB served | CPU ms / request | CPU ms / MiB served | peak RSS growth MiB |",
  );
  console.log("| --- | --- | --- | --- | --- |");
  for (const row of rows) console.log(row);
} finally {
  await relay.stop();
  await rm(dir, { recursive: true, force: true });
}
