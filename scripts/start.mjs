#!/usr/bin/env node
// `npm start`: the relay on http://127.0.0.1:8787 (or $PORT) with embedded storage (local R2
// and D1 on disk under .wrangler/) and the local-only dev secrets from .dev.vars.example.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const wrangler = [
  fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url)),
];
const env = {
  ...process.env,
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_SEND_METRICS: "false",
  // No banner: its "update available" asks about the pinned wrangler (and its check calls out).
  WRANGLER_HIDE_BANNER: "true",
};
const port = process.env.PORT || "8787";
if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
  console.error(`PORT must be a TCP port number (1-65535), not "${port}"`);
  process.exit(2);
}
const url = `http://127.0.0.1:${port}`;

if (!existsSync(`${root}/.dev.vars`)) {
  copyFileSync(`${root}/.dev.vars.example`, `${root}/.dev.vars`);
  console.log("Created .dev.vars from .dev.vars.example (local-only secrets).");
}
const adminToken =
  /^AIRLOCK_ADMIN_TOKEN=(.*)$/m.exec(readFileSync(`${root}/.dev.vars`, "utf8"))?.[1] ??
  "<AIRLOCK_ADMIN_TOKEN>";

const migrate = spawnSync(
  process.execPath,
  [...wrangler, "d1", "migrations", "apply", "DB", "--local"],
  {
    cwd: root,
    env,
    stdio: ["ignore", "ignore", "inherit"],
  },
);
if (migrate.status !== 0) process.exit(migrate.status ?? 1);

console.log(`
Airlock relay starting on ${url} (storage: local R2 + D1 in .wrangler/state)

Mint a session token (the operator's step):
  curl -s -X POST ${url}/v1/sessions -H "Authorization: Bearer ${adminToken}" \\
       -H "Content-Type: application/json" -d '{"ttlSeconds": 86400}'

Install the shim in a sandbox and send a file:
  curl -fsSL ${url}/shim/airlock.mjs -o /usr/local/bin/airlock && chmod +x /usr/local/bin/airlock
  (an image with Python but no Node or curl:)
  python3 -c "import urllib.request,sys; urllib.request.urlretrieve(sys.argv[1]+'/shim/airlock.py', '/usr/local/bin/airlock')" ${url} && chmod +x /usr/local/bin/airlock
  export AIRLOCK_URL=${url} AIRLOCK_TOKEN=<token from above>
  airlock send report.pdf

Run the hourly sweep now (cron triggers do not fire by themselves locally):
  curl "${url}/__scheduled?cron=17+*+*+*+*"
`);

// --test-scheduled serves /__scheduled (above) instead of warning that crons do not fire.
const child = spawn(
  process.execPath,
  [
    ...wrangler,
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    port,
    "--show-interactive-dev-session=false",
    "--test-scheduled",
  ],
  {
    cwd: root,
    env: process.stdout.isTTY ? { ...env, FORCE_COLOR: "1" } : env,
    stdio: ["inherit", "pipe", "pipe"],
    detached: true,
  },
);

// wrangler.toml's [build] (for `wrangler deploy`) is a no-op here, as prestart built the shim,
// but dev reports running it at start and on every change under src/: leave those lines out.
const ansi = /\u001b\[[0-9;]*m/g;
const customBuildLine = /^(\[custom build\]|The file .* changed, restarting build\.\.\.$)/;
for (const [from, to] of [
  [child.stdout, process.stdout],
  [child.stderr, process.stderr],
]) {
  createInterface({ input: from, crlfDelay: Infinity }).on("line", (line) => {
    if (!customBuildLine.test(line.replace(ansi, ""))) to.write(`${line}\n`);
  });
}
const stop = () => {
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    // already stopped
  }
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
child.on("close", (code) => process.exit(code ?? 0));
