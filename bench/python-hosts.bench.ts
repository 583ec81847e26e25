/**
 * `npm run bench:python-hosts [-- --sizes 16,256]`: the deepagents recipe of docs/hosts (the
 * Python SDK's exec transport) against the frameworks' own way of moving a file through exec
 * (base64 in 64 KiB chunks, one `printf … | base64 -d >> file` command per chunk in, one
 * `dd … | base64` per chunk out) and against `scp`, both directions, over a real sshd on
 * 127.0.0.1 (one ControlMaster connection shared by every method). Random bytes (gzip does not
 * pay). The recipe and scp take turns three times (median), the chunks run once. Prints a
 * markdown table and the targets: inbound ≥ 50× faster than the chunks at 16 MiB, and within
 * 1.5× of scp both ways.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startSshd } from "../test/sdk/sshd";

const root = fileURLToPath(new URL("..", import.meta.url));
const RECIPE = "recipe (exec transport)";
const CHUNKS = "base64 chunks (64 KiB a command)";

interface Measured {
  size: number;
  direction: "inbound" | "outbound";
  method: string;
  seconds: number;
}

function runDriver(env: Record<string, string>): Promise<Measured[]> {
  return new Promise((resolve, reject) => {
    const child = spawn("python3", [join(root, "bench/python_hosts.py")], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const rows: Measured[] = [];
    let pending = "";
    child.stdout.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines.filter(Boolean)) {
        const row = JSON.parse(line) as Measured;
        console.error(
          `${row.direction} ${row.size / 2 ** 20} MiB ${row.method}: ${row.seconds.toFixed(2)} s`,
        );
        rows.push(row);
      }
    });
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve(rows) : reject(new Error(`bench/python_hosts.py exited ${code}`)),
    );
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { sizes: { type: "string" } } });
  const sizes = values.sizes ?? "16,256";
  const sshd = await startSshd();
  const dir = await mkdtemp(join(tmpdir(), "airlock-bench-python-"));
  let rows: Measured[];
  const loadBefore = loadavg()[0] ?? 0;
  try {
    rows = await runDriver({
      BENCH_SSH: JSON.stringify(sshd),
      BENCH_SIZES_MIB: sizes,
      BENCH_DIR: dir,
      PYTHONPATH: [join(root, "sdk-python/src"), join(root, "docs/hosts")].join(":"),
    });
  } finally {
    await sshd.stop();
    await rm(dir, { recursive: true, force: true });
  }
  /** The median of a method's runs (the recipe and scp run three times, the chunks once). */
  const time = (size: number, direction: string, method: string) => {
    const runs = rows
      .filter((r) => r.size === size && r.direction === direction && r.method === method)
      .map((r) => r.seconds)
      .sort((a, b) => a - b);
    return runs[Math.floor(runs.length / 2)] ?? NaN;
  };
  const out = [
    "# Python hosts: the deepagents recipe over SSH (127.0.0.1, one ControlMaster connection)",
    "",
    `${cpus().length} CPUs, load ${loadBefore.toFixed(2)} before, ${(loadavg()[0] ?? 0).toFixed(2)} after; median of 3 runs for the recipe and scp (taking turns), one run of the chunks; random bytes.`,
    "",
    "| direction | size | method | time | recipe is faster by |",
    "| --- | ---: | --- | ---: | ---: |",
  ];
  const targets: string[] = [];
  let allMet = true;
  for (const size of [...new Set(rows.map((r) => r.size))]) {
    for (const direction of ["inbound", "outbound"] as const) {
      const ours = time(size, direction, RECIPE);
      for (const method of [RECIPE, "scp", CHUNKS]) {
        const seconds = time(size, direction, method);
        out.push(
          `| ${direction} | ${size / 2 ** 20} MiB | ${method} | ${seconds.toFixed(2)} s | ${(seconds / ours).toFixed(2)}× |`,
        );
      }
      const vsScp = ours / time(size, direction, "scp");
      const scpMet = vsScp <= 1.5;
      allMet &&= scpMet;
      targets.push(
        `- ${direction}, ${size / 2 ** 20} MiB: ${vsScp.toFixed(2)}× scp's time (target ≤ 1.5×): ${scpMet ? "met" : "MISSED"}`,
      );
      if (direction === "inbound" && size === 16 * 2 ** 20) {
        const faster = time(size, direction, CHUNKS) / ours;
        const met = faster >= 50;
        allMet &&= met;
        targets.push(
          `- inbound, 16 MiB: ${faster.toFixed(1)}× faster than base64 chunks (target ≥ 50×): ${met ? "met" : "MISSED"}`,
        );
      }
    }
  }
  out.push("", "Targets:", "", ...targets);
  console.log(out.join("\n"));
  if (!allMet) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
