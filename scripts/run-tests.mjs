#!/usr/bin/env node
// `npm test`: the two Vitest projects side by side — the Workers-runtime suites (CPU in
// workerd) and the end-to-end suites (mostly waiting on relays, shims and queues) — so a
// 2-core machine keeps both cores busy. Each project's output is printed whole when it ends,
// workers first; the exit status is non-zero if either failed.
//
// A passing run prints a summary: Vitest's dot reporter (failures in full), and each project's
// per-file results in test-artifacts/vitest-<project>.json. Lines workerd prints by itself when
// a test cuts a stream on purpose ("disconnected: pump canceled", an uncaught "Network
// connection lost") go to test-artifacts/workerd-<project>.log, with one line saying how many;
// relay logs are in test-artifacts/relay-logs/ (a failing test names its file).
// Any `--reporter` given here replaces the dot reporter.
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const artifacts = fileURLToPath(new URL("../test-artifacts/", import.meta.url));
const vitest = fileURLToPath(new URL("../node_modules/vitest/vitest.mjs", import.meta.url));
const extra = process.argv.slice(2);
const ownReporter = extra.some((arg) => arg.startsWith("--reporter"));
/** What workerd prints about a stream a test cut on purpose: kept out of the summary. */
const WORKERD_LINE = /^(exception = workerd\/|uncaught exception; |stack: \S*\/workerd@)/;

mkdirSync(artifacts, { recursive: true });

function run(project) {
  const reporters = ownReporter
    ? []
    : ["--reporter=dot", "--reporter=json", `--outputFile.json=${artifacts}vitest-${project}.json`];
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [vitest, "run", "--project", project, ...reporters, ...extra],
      { cwd: root, env: process.env, stdio: ["ignore", "pipe", "pipe"] },
    );
    const output = [];
    child.stdout.on("data", (chunk) => output.push(chunk));
    child.stderr.on("data", (chunk) => output.push(chunk));
    child.on("close", (code, signal) =>
      resolve({ project, output, code: code ?? (signal ? 1 : 0) }),
    );
  });
}

/** The project's output without workerd's own lines, which go to a file of their own. */
function summary(project, output) {
  const lines = Buffer.concat(output).toString("utf8").split("\n");
  const workerd = lines.filter((line) => WORKERD_LINE.test(line));
  if (workerd.length === 0) return lines.join("\n");
  const file = `${artifacts}workerd-${project}.log`;
  writeFileSync(file, workerd.join("\n") + "\n");
  const kept = lines.filter((line) => !WORKERD_LINE.test(line));
  kept.push(`workerd printed ${workerd.length} lines about streams cut by tests: ${file}`, "");
  return kept.join("\n");
}

const started = Date.now();
const results = await Promise.all([run("workers"), run("node")]);
let failed = false;
for (const { project, output, code } of results) {
  process.stdout.write(summary(project, output));
  if (code !== 0) {
    failed = true;
    process.stdout.write(`\nthe ${project} project failed (exit ${code})\n`);
  }
}
const seconds = Math.round((Date.now() - started) / 1000);
process.stdout.write(
  `\nboth projects ${failed ? "ran, with failures" : "passed"} in ${seconds} s\n`,
);
process.exit(failed ? 1 : 0);
