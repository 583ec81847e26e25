#!/usr/bin/env node
// Makes sure the extra Node.js runtimes the shim's tests use (test/runtimes: Node 18, the oldest
// the shim supports, and Node 24) are installed. Idempotent: installs only when one is missing.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL("../test/runtimes", import.meta.url));

/** Runtime name → the major version its binary must report. */
const RUNTIMES = { node18: 18, node24: 24 };

function installed(name, major) {
  const bin = `${dir}/node_modules/${name}/bin/node`;
  if (!existsSync(bin)) return false;
  try {
    return execFileSync(bin, ["--version"], { encoding: "utf8" }).startsWith(`v${major}.`);
  } catch {
    return false;
  }
}

const missing = Object.entries(RUNTIMES).filter(([name, major]) => !installed(name, major));
if (missing.length > 0) {
  console.log(
    `installing test runtimes (${missing.map(([name]) => name).join(", ")}) into test/runtimes`,
  );
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  execFileSync(npm, ["ci", "--prefix", dir, "--no-audit", "--no-fund"], { stdio: "inherit" });
  for (const [name, major] of missing) {
    if (!installed(name, major)) {
      throw new Error(`test runtime ${name} is still missing after npm install`);
    }
  }
}
