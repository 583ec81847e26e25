#!/usr/bin/env node
// `npm start`: the relay on http://127.0.0.1:8787 with embedded storage (local R2 and D1
// on disk under .wrangler/) and the local-only dev secrets from .dev.vars.example.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const wrangler = [
  fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url)),
];
const env = {
  ...process.env,
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_SEND_METRICS: "false",
};
const port = process.env.PORT ?? "8787";
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
  export AIRLOCK_URL=${url} AIRLOCK_TOKEN=<token from above>
  airlock send report.pdf
`);

const child = spawn(
  process.execPath,
  [...wrangler, "dev", "--ip", "127.0.0.1", "--port", port, "--show-interactive-dev-session=false"],
  { cwd: root, env, stdio: "inherit", detached: true },
);
const stop = () => {
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    // already stopped
  }
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
child.on("exit", (code) => process.exit(code ?? 0));
