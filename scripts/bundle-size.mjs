#!/usr/bin/env node
// `npm run bundle:size`: builds the Worker as `wrangler deploy` would (--dry-run, no account
// needed) and reports its size, gzipped, against the Workers limits (3 MB free, 10 MB paid).
// Fails above BUDGET so the bundle stays small.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const BUDGET = 1024 * 1024; // gzipped bytes
const root = fileURLToPath(new URL("..", import.meta.url));
const outdir = mkdtempSync(join(tmpdir(), "airlock-bundle-"));
try {
  const wrangler = join(root, "node_modules/wrangler/bin/wrangler.js");
  const env = {
    ...process.env,
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    WRANGLER_SEND_METRICS: "false",
  };
  const run = spawnSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", outdir], {
    cwd: root,
    env,
    encoding: "utf8",
  });
  if (run.status !== 0) {
    console.error(run.stderr || run.stdout);
    process.exit(run.status ?? 1);
  }
  const bundle = readFileSync(join(outdir, "index.js"));
  const gzipped = gzipSync(bundle, { level: 9 }).length;
  const kib = (n) => `${(n / 1024).toFixed(0)} KiB`;
  console.log(
    `Worker bundle: ${kib(bundle.length)} raw, ${kib(gzipped)} gzipped ` +
      `(${((gzipped / 3e6) * 100).toFixed(1)} % of the 3 MB free limit, ` +
      `${((gzipped / 10e6) * 100).toFixed(1)} % of 10 MB paid; budget ${kib(BUDGET)})`,
  );
  if (gzipped > BUDGET) {
    console.error(`bundle is over its ${kib(BUDGET)} gzipped budget`);
    process.exit(1);
  }
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
