#!/usr/bin/env node
// `npm test`: the two Vitest projects side by side — the Workers-runtime suites (CPU in
// workerd) and the end-to-end suites (mostly waiting on relays, shims and queues) — so a
// 2-core machine keeps both cores busy. Each project's output is printed whole when it ends,
// workers first; the exit status is non-zero if either failed.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const vitest = fileURLToPath(new URL("../node_modules/vitest/vitest.mjs", import.meta.url));
const extra = process.argv.slice(2);

function run(project) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [vitest, "run", "--project", project, ...extra], {
      cwd: root,
      env: process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = [];
    child.stdout.on("data", (chunk) => output.push(chunk));
    child.stderr.on("data", (chunk) => output.push(chunk));
    child.on("close", (code, signal) =>
      resolve({ project, output, code: code ?? (signal ? 1 : 0) }),
    );
  });
}

const started = Date.now();
const results = await Promise.all([run("workers"), run("node")]);
let failed = false;
for (const { project, output, code } of results) {
  process.stdout.write(Buffer.concat(output));
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
