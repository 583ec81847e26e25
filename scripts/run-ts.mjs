#!/usr/bin/env node
// Runs a TypeScript entry: `node scripts/run-ts.mjs <entry.ts> [args...]`. esbuild bundles the
// entry (npm packages stay external) into a temp .mjs under node_modules/.cache, so that the
// bundle still resolves the project's packages, and node runs it with the remaining arguments.
// Each module keeps its own `import.meta.url`, so code that locates files relative to itself
// (e.g. test/support/relay.ts) behaves as it does unbundled. The exit code is the child's.
import { build } from "esbuild";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [entryArg, ...args] = process.argv.slice(2);
if (!entryArg) {
  console.error("usage: node scripts/run-ts.mjs <entry.ts> [args...]");
  process.exit(2);
}
const root = fileURLToPath(new URL("..", import.meta.url));
const entry = resolve(entryArg);
const cacheDir = join(root, "node_modules/.cache/run-ts");
await mkdir(cacheDir, { recursive: true });
const outDir = mkdtempSync(join(cacheDir, "run-"));
const outfile = join(outDir, basename(entry).replace(/\.[cm]?tsx?$/, "") + ".mjs");
const cleanup = () => rmSync(outDir, { recursive: true, force: true });

/** Replaces `import.meta.url` in each project source with that source's own file URL. */
const keepImportMetaUrl = {
  name: "keep-import-meta-url",
  setup(pluginBuild) {
    pluginBuild.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, (file) => {
      if (file.path.includes("/node_modules/")) return undefined;
      const source = readFileSync(file.path, "utf8");
      const url = JSON.stringify(pathToFileURL(file.path).href);
      const ext = file.path.slice(file.path.lastIndexOf(".") + 1).replace(/^[cm]/, "");
      return { contents: source.replaceAll("import.meta.url", url), loader: ext };
    });
  },
};

try {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: `node${process.versions.node.split(".")[0]}`,
    packages: "external",
    sourcemap: "inline",
    plugins: [keepImportMetaUrl],
    logLevel: "warning",
  });
} catch {
  cleanup();
  process.exit(1); // esbuild has printed the errors.
}

const child = spawn(process.execPath, ["--enable-source-maps", outfile, ...args], {
  stdio: "inherit",
});
// Ctrl-C reaches the child through the terminal's process group; other signals are forwarded.
const forward = (signal) => () => child.kill(signal);
process.on("SIGINT", () => {});
process.on("SIGTERM", forward("SIGTERM"));
process.on("SIGHUP", forward("SIGHUP"));
child.on("exit", (code, signal) => {
  cleanup();
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code ?? 1);
});
