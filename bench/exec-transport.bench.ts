/**
 * `npm run bench:exec` (= `node scripts/run-ts.mjs bench/exec-transport.bench.ts [--runs <n>]`):
 * the SDK's exec transport (local files: `pushLocalFile`, `collectToLocalFile`; the streamed
 * path a relay file takes shown beside them) over a real SSH hop (a throwaway sshd on 127.0.0.1, one
 * ControlMaster connection shared by every method) against the way agent frameworks move
 * files (chunked `printf` of base64, 60,000 characters a command; a one-shot `base64` read)
 * and against `scp` over the same ControlMaster. 16 MiB of random bytes and of text. Each
 * figure is the median of the runs; ratios are of figures measured in this same run.
 * Prints a markdown report.
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import {
  collectStream,
  collectToLocalFile,
  pushLocalFile,
  pushStream,
  shellQuote,
} from "../sdk/src/node";
import { startSshd } from "../test/sdk/sshd";
import { hopOf, remote, remotePath, scp, SCP_LEGACY, type Hop } from "./exec-transport/hop";

const MiB = 1024 * 1024;
const SIZE = 16 * MiB;
const PRINTF_CHUNK = 60_000;
/**
 * Bash as the login shell reads ~/.bashrc for every command SSH runs; an account whose rc
 * is slow (e.g. one that runs `pyenv init`) then adds its cost to each command of every
 * method but scp's. SHLVL=1 (accepted by the test sshd) makes bash skip it, so that the
 * figures measure the transports, not the account. `--login-rc` keeps the rc.
 */
let CLEAN_SHELL = ["-o", "SetEnv=SHLVL=1"];

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Moves the file; may return how the bytes went (the exec transport's encoding). */
type Method = (hop: Hop, local: string, sandbox: string, sum: string) => Promise<string | void>;

const PUSH: Record<string, Method> = {
  async "exec transport (pushLocalFile)"(hop, local, sandbox) {
    const pushed = await pushLocalFile(hop.exec, local, sandbox, { overwrite: true });
    return pushed.transfer;
  },
  /** The bytes through this process, as a push of a relay file streams them. */
  async "exec transport, streamed (pushStream)"(hop, local, sandbox, sum) {
    const source = Readable.toWeb(createReadStream(local)) as ReadableStream<Uint8Array>;
    const pushed = await pushStream(hop.exec, source, sandbox, {
      sha256: sum,
      size: SIZE,
      overwrite: true,
    });
    return pushed.transfer;
  },
  async "chunked printf (base64, 60,000 chars a command)"(hop, local, sandbox) {
    const text = (await readFile(local)).toString("base64");
    await remote(hop, `: > ${shellQuote(`${sandbox}.b64`)}`);
    for (let at = 0; at < text.length; at += PRINTF_CHUNK)
      await remote(
        hop,
        `printf %s ${shellQuote(text.slice(at, at + PRINTF_CHUNK))} >> ${shellQuote(`${sandbox}.b64`)}`,
      );
    await remote(
      hop,
      `base64 -d < ${shellQuote(`${sandbox}.b64`)} > ${shellQuote(sandbox)} && rm -f ${shellQuote(`${sandbox}.b64`)}`,
    );
  },
  "scp (same ControlMaster)": (hop, local, sandbox) =>
    scp(hop, [], local, remotePath(hop, sandbox)),
  [SCP_LEGACY]: (hop, local, sandbox) => scp(hop, ["-O"], local, remotePath(hop, sandbox)),
};

const COLLECT: Record<string, Method> = {
  async "exec transport (collectToLocalFile)"(hop, local, sandbox) {
    const collected = await collectToLocalFile(hop.exec, sandbox, local);
    return collected.transfer;
  },
  /** The bytes through this process, as a collect into the relay streams them. */
  async "exec transport, streamed (collectStream)"(hop, local, sandbox) {
    const collected = await collectStream(hop.exec, sandbox);
    await pipeline(
      Readable.fromWeb(collected.stream as import("node:stream/web").ReadableStream),
      createWriteStream(local),
    );
    return collected.transfer;
  },
  async "one-shot base64"(hop, local, sandbox) {
    const text = await remote(hop, `base64 < ${shellQuote(sandbox)}`);
    await writeFile(local, Buffer.from(text.toString(), "base64"));
  },
  "scp (same ControlMaster)": (hop, local, sandbox) =>
    scp(hop, [], remotePath(hop, sandbox), local),
  [SCP_LEGACY]: (hop, local, sandbox) => scp(hop, ["-O"], remotePath(hop, sandbox), local),
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

/**
 * Times each method on `bytes`, the methods taking turns within each round so that all of
 * them meet the same load on a shared machine; one round first, not counted (warm caches, the
 * exec transport's one-time probe of the sandbox's tools).
 */
async function measure(
  hop: Hop,
  methods: Record<string, Method>,
  direction: "push" | "collect",
  bytes: Buffer,
  dir: string,
  runs: number,
): Promise<Map<string, { ms: number; how: string }>> {
  const sum = sha256(bytes);
  const samples = new Map<string, number[]>();
  const hows = new Map<string, Set<string>>();
  for (let round = -1; round < runs; round++) {
    for (const [name, method] of Object.entries(methods)) {
      // The chunked printf way takes seconds a run: one run of it, no warm-up.
      if (name.startsWith("chunked") && round !== 0) continue;
      const host = join(dir, "host.bin");
      const sandbox = join(dir, "sandbox.bin");
      await rm(host, { force: true });
      await rm(sandbox, { force: true });
      await writeFile(direction === "push" ? host : sandbox, bytes);
      const started = performance.now();
      const how = await method(hop, host, sandbox, sum);
      const ms = performance.now() - started;
      const landed = await readFile(direction === "push" ? sandbox : host);
      if (sha256(landed) !== sum)
        throw new Error(`${name} (${direction}) did not move the bytes intact`);
      console.error(`${direction} ${name}: ${ms.toFixed(0)} ms${how ? ` (${how})` : ""}`);
      if (round < 0) continue;
      samples.set(name, [...(samples.get(name) ?? []), ms]);
      if (how) hows.set(name, (hows.get(name) ?? new Set()).add(how));
    }
  }
  return new Map(
    [...samples].map(([name, values]) => [
      name,
      { ms: median(values), how: [...(hows.get(name) ?? [])].join(", ") },
    ]),
  );
}

function corpus(): Record<string, Buffer> {
  const line = (i: number) =>
    `${i.toString().padStart(8, "0")} INFO request handled path=/v1/files/${(i * 7919) % 100_000} status=200 ms=${i % 37}\n`;
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < SIZE; i++) {
    const text = line(i);
    lines.push(text);
    size += text.length;
  }
  return {
    "16 MiB random": randomBytes(SIZE),
    "16 MiB text (logs)": Buffer.from(lines.join("")).subarray(0, SIZE),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: "string" }, "login-rc": { type: "boolean" } },
  });
  if (values["login-rc"]) CLEAN_SHELL = [];
  const runs = Math.max(1, Number(values.runs ?? 5));
  const sshd = await startSshd();
  const dir = await mkdtemp(join(tmpdir(), "airlock-bench-exec-"));
  const out: string[] = [];
  let allMet = true;
  try {
    const hop = hopOf(sshd, CLEAN_SHELL);
    await remote(hop, "true"); // opens the ControlMaster connection every method then shares
    out.push(
      "# Exec transport over SSH (127.0.0.1, one ControlMaster connection)",
      "",
      `${cpus().length} CPUs, load ${loadavg()[0]?.toFixed(2)}; median of ${runs} rounds after one warm-up round, the methods taking turns in each (chunked printf: 1 run); ` +
        (CLEAN_SHELL.length > 0
          ? "the login shell's rc skipped (SHLVL=1)."
          : "the login shell's rc read (--login-rc)."),
      "",
      "| direction | file | method | time | vs exec transport |",
      "| --- | --- | --- | ---: | ---: |",
    );
    const targets: string[] = [];
    for (const [label, bytes] of Object.entries(corpus())) {
      for (const [direction, methods] of [
        ["push", PUSH],
        ["collect", COLLECT],
      ] as const) {
        const times = await measure(hop, methods, direction, bytes, dir, runs);
        const [ours, ...others] = [...times.entries()];
        if (!ours) continue;
        const oursMs = ours[1].ms;
        for (const [name, { ms, how }] of [ours, ...others])
          out.push(
            `| ${direction} | ${label} | ${name}${how ? ` (sent ${how})` : ""} | ${ms.toFixed(0)} ms | ${(ms / oursMs).toFixed(2)}× |`,
          );
        const scp = times.get("scp (same ControlMaster)")?.ms ?? NaN;
        const vsScp = oursMs / scp;
        const scpMet = vsScp <= 1.5;
        targets.push(
          `- ${direction}, ${label}: ${vsScp.toFixed(2)}× scp's time (target ≤ 1.5×): ${scpMet ? "met" : "MISSED"}`,
        );
        allMet &&= scpMet;
        if (direction === "push") {
          const printf = times.get("chunked printf (base64, 60,000 chars a command)")?.ms ?? NaN;
          const faster = printf / oursMs;
          const met = faster >= 20;
          targets.push(
            `- push, ${label}: ${faster.toFixed(1)}× faster than chunked printf (target ≥ 20×): ${met ? "met" : "MISSED"}`,
          );
          allMet &&= met;
        }
      }
    }
    out.push(
      "",
      `Load at the end: ${loadavg()[0]?.toFixed(2)} (1 min), ${loadavg()[1]?.toFixed(2)} (5 min).`,
      "",
      "Targets:",
      "",
      ...targets,
    );
  } finally {
    await sshd.stop();
    await rm(dir, { recursive: true, force: true });
  }
  console.log(out.join("\n"));
  if (!allMet) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
