#!/usr/bin/env node
// `npm start`: the relay on http://127.0.0.1:8787 (or $PORT) with embedded storage (local R2
// and D1 on disk under .wrangler/) and the local-only dev secrets from .dev.vars.example.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
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
  // No DevTools proxy unless asked for (AIRLOCK_DEVTOOLS=1): it posts an HTTP request to
  // wrangler per 4 KiB of every subrequest body, and a large read-back from S3 ran workerd out
  // of descriptors (docs/testing.md, "What wrangler dev does under load").
  ...(process.env.AIRLOCK_DEVTOOLS === "1" ? {} : { VSCODE_INSPECTOR_OPTIONS: "{}" }),
};
const port = process.env.PORT || "8787";
if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
  console.error(`PORT must be a TCP port number (1-65535), not "${port}"`);
  process.exit(2);
}
const url = `http://127.0.0.1:${port}`;

/** Whether nothing listens on 127.0.0.1:`p` (binding it for a moment is the only sure test). */
const portFree = (p) =>
  new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host: "127.0.0.1", port: p, exclusive: true }, () =>
      server.close(() => resolve(true)),
    );
  });

/** The one line for a taken port, naming a free one to use instead when one is near. */
async function portTakenLine() {
  let advice = "set PORT to a free port";
  for (let next = Number(port) + 1; next <= Math.min(Number(port) + 20, 65535); next++) {
    if (await portFree(next)) {
      advice = `run PORT=${next} npm start`;
      break;
    }
  }
  return `airlock: port ${port} is taken (another npm start?); ${advice}`;
}

// Checked before anything else, so a second `npm start` says so in one line (workerd would
// print a fatal stack trace and then advise a --port flag that npm start does not take).
if (!(await portFree(Number(port)))) {
  console.error(await portTakenLine());
  process.exit(1);
}

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
// Taken in the moment between the check above and workerd's bind: the same one line instead
// of workerd's stack trace and wrangler's --port advice.
const bindFailure = /Address already in use|^stack: |^\s*$|Logs were written to/;
/** Set (to the printed notice) once workerd reports the port taken. */
let portTaken;
for (const [from, to] of [
  [child.stdout, process.stdout],
  [child.stderr, process.stderr],
]) {
  createInterface({ input: from, crlfDelay: Infinity }).on("line", (line) => {
    const plain = line.replace(ansi, "");
    if (customBuildLine.test(plain)) return;
    if (/Address already in use/.test(plain) && !portTaken) {
      portTaken = portTakenLine().then((notice) => console.error(notice));
    }
    if (portTaken && bindFailure.test(plain)) return;
    to.write(`${line}\n`);
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
// Closing the terminal: the relay (in its own process group) would otherwise keep the port.
process.on("SIGHUP", stop);
// A closed terminal also fails writes to it (EIO): stop the relay rather than crash past it.
process.stdout.on("error", stop);
process.stderr.on("error", stop);
child.on("close", (code) => {
  if (portTaken) void portTaken.then(() => process.exit(1));
  else process.exit(code ?? 0);
});
