#!/usr/bin/env node
// `npm run deploy [-- wrangler deploy's options]`: wrangler deploy without its banner (whose
// "update available" asks the registry about the pinned wrangler) and without usage telemetry,
// so without the notice announcing it. wrangler.toml's [build] builds the shim first.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const wrangler = fileURLToPath(
  new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url),
);
const deploy = spawnSync(process.execPath, [wrangler, "deploy", ...process.argv.slice(2)], {
  cwd: fileURLToPath(new URL("..", import.meta.url)),
  stdio: "inherit",
  env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true" },
});
process.exit(deploy.status ?? 1);
