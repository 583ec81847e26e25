#!/usr/bin/env node
// Builds the operator SDK (sdk/src), the package `sdk/package.json` describes, into sdk/dist:
// ES modules for any runtime with web fetch and streams (index.mjs, the core) and for Node
// (node.mjs, adds file paths), sharing one chunk so both entries have the same classes; plus
// .d.ts files under sdk/dist/types. The relay modules the SDK shares (src/names.ts and
// src/services/human-size.ts, pure code; src/wire-types.ts, types only) are bundled in: the
// package has no dependencies.
// With `--pack <dir>` it then packs the package into <dir> (`npm pack`) and prints the path.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const target = `${root}sdk/dist`;
// Built aside and swapped in, so a concurrent build or reader never sees a half-written dir.
const outdir = `${root}dist/.sdk-build-${process.pid}`;
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

await rm(outdir, { recursive: true, force: true });
await mkdir(`${root}dist`, { recursive: true });

// The core must not lean on Node's or Workers' globals: check it without their types.
execFileSync(process.execPath, [tsc, "-p", `${root}sdk/tsconfig.core.json`], { stdio: "inherit" });

await build({
  entryPoints: { index: `${root}sdk/src/index.ts`, node: `${root}sdk/src/node.ts` },
  outdir,
  outExtension: { ".js": ".mjs" },
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  platform: "neutral",
  format: "esm",
  target: "es2022",
  external: ["node:*"],
  legalComments: "none",
  logLevel: "warning",
});

execFileSync(
  process.execPath,
  [
    tsc,
    "-p",
    `${root}sdk/tsconfig.json`,
    "--noEmit",
    "false",
    "--emitDeclarationOnly",
    "--outDir",
    `${outdir}/types`,
  ],
  { stdio: "inherit" },
);

const sizes = [];
for (const name of [
  "index.mjs",
  "node.mjs",
  ...(await readdir(`${outdir}/chunks`)).map((c) => `chunks/${c}`),
])
  sizes.push(`${name} ${((await stat(`${outdir}/${name}`)).size / 1024).toFixed(1)} KiB`);
console.log(`built sdk/dist: ${sizes.join(", ")}; types in sdk/dist/types/sdk/src`);

// Swap in: move the old build aside, then rename the new one into place (retrying if a
// concurrent build got there in between; both builds are of the same sources).
const old = `${root}dist/.sdk-old-${process.pid}`;
for (let attempt = 0; ; attempt++) {
  await rename(target, old).catch((error) => {
    if (error.code !== "ENOENT") throw error;
  });
  try {
    await rename(outdir, target);
    break;
  } catch (error) {
    if (attempt >= 5 || (error.code !== "ENOTEMPTY" && error.code !== "EEXIST")) throw error;
  } finally {
    await rm(old, { recursive: true, force: true });
  }
}

const packAt = process.argv.indexOf("--pack");
if (packAt !== -1) {
  const destination = resolve(process.argv[packAt + 1] ?? ".");
  await mkdir(destination, { recursive: true });
  // Scripts off: its prepack is this build, just done.
  const packed = execFileSync(
    "npm",
    ["pack", "--json", "--ignore-scripts", "--pack-destination", destination],
    { cwd: `${root}sdk`, encoding: "utf8" },
  );
  const [{ filename }] = JSON.parse(packed);
  console.log(`packed ${destination}/${filename}`);
}
