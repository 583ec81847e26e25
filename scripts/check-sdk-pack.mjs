#!/usr/bin/env node
// Checks the SDK package as a user gets it: builds and packs sdk/ (scripts/build-sdk.mjs
// --pack), checks the tarball's file list and size, installs it into a fresh project with no
// registry (a tarball with no dependencies needs none), and imports each entry point there in
// plain Node: ESM `import`, CommonJS `require()` where this Node loads ES modules that way
// (Node >= 20.19 / 22.12), and a TypeScript consumer resolving the types. Exits 1 on a fault.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const MAX_INSTALLED_BYTES = 1024 * 1024;
/** Every path the tarball may hold: the manifest, the readme, the build. */
const ALLOWED = [
  /^package\/package\.json$/,
  /^package\/README\.md$/,
  /^package\/dist\/(index|node)\.mjs$/,
  /^package\/dist\/chunks\/chunk-[A-Z0-9]+\.mjs$/,
  /^package\/dist\/types\/sdk\/src\/([a-z0-9-]+\/)?[a-z0-9-]+\.d\.ts$/,
  // The relay modules the SDK shares: pure name and size rules, wire types (types only).
  /^package\/dist\/types\/src\/(names|wire-types|services\/human-size)\.d\.ts$/,
  // The shim modules the SDK shares: in-order hashing, range settings and what they read.
  /^package\/dist\/types\/agent-shim\/src\/(download\/(ordered-hash|parallel-settings)|cli\/(config|errors))\.d\.ts$/,
];
const REQUIRED = [
  "package/package.json",
  "package/README.md",
  "package/dist/index.mjs",
  "package/dist/node.mjs",
  "package/dist/types/sdk/src/index.d.ts",
  "package/dist/types/sdk/src/node.d.ts",
];

const faults = [];
const check = (ok, fault) => {
  if (!ok) faults.push(fault);
};
const run = (command, args, cwd) =>
  execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

const work = await mkdtemp(join(tmpdir(), "airlock-sdk-pack-"));
try {
  const built = run(process.execPath, [join(root, "scripts/build-sdk.mjs"), "--pack", work], root);
  const tarball = /^packed (.+\.tgz)$/m.exec(built)?.[1];
  if (!tarball) throw new Error(`build-sdk.mjs printed no tarball:\n${built}`);

  const files = run("tar", ["tzf", tarball], work).trim().split("\n");
  for (const file of files)
    check(
      ALLOWED.some((pattern) => pattern.test(file)),
      `unexpected file in the tarball: ${file}`,
    );
  for (const file of REQUIRED) check(files.includes(file), `missing from the tarball: ${file}`);

  // A fresh project, installed from the tarball alone.
  const project = join(work, "consumer");
  await mkdir(project);
  await writeFile(
    join(project, "package.json"),
    JSON.stringify({ name: "consumer", version: "1.0.0", private: true }),
  );
  run(
    "npm",
    ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball],
    project,
  );
  const installed = await readdir(join(project, "node_modules"));
  check(
    installed.filter((name) => !name.startsWith(".")).join() === "airlock-relay-sdk",
    `the install brought more than the SDK: ${installed.join(", ")}`,
  );
  const bytes = await treeBytes(join(project, "node_modules"));
  check(bytes < MAX_INSTALLED_BYTES, `installed size ${bytes} bytes is not under 1 MiB`);
  const manifest = createRequire(join(project, "package.json"))("airlock-relay-sdk/package.json");
  check(
    !manifest.dependencies && !manifest.peerDependencies && !manifest.optionalDependencies,
    "the package declares dependencies",
  );

  // ESM: both entries load, and share one AirlockError class.
  const esm = `
    import * as core from "airlock-relay-sdk";
    import * as node from "airlock-relay-sdk/node";
    const missing = ["AirlockClient", "AirlockSession", "AirlockError"].filter((n) => typeof core[n] !== "function")
      .concat(["AirlockClient", "AirlockError", "downloadToFile", "cleanFileName", "spawnCli"].filter((n) => typeof node[n] !== "function"));
    if (missing.length) throw new Error("missing exports: " + missing.join(", "));
    if (core.AirlockError !== node.AirlockError) throw new Error("two AirlockError classes");
    const client = new node.AirlockClient({ url: "http://127.0.0.1:9", adminToken: "t" });
    if (typeof client.listFiles !== "function") throw new Error("no listFiles");
    console.log("esm ok");
  `;
  check(
    run(process.execPath, ["--input-type=module", "-e", esm], project).trim() === "esm ok",
    "ESM import printed something else",
  );

  // CommonJS: require() of the ES modules, on a Node that does it without a flag.
  if (process.features.require_module) {
    const cjs = `
      const core = require("airlock-relay-sdk");
      const node = require("airlock-relay-sdk/node");
      if (typeof core.AirlockClient !== "function" || core.AirlockError !== node.AirlockError)
        throw new Error("require() gave other exports");
      console.log("cjs ok");
    `;
    check(
      run(process.execPath, ["--input-type=commonjs", "-e", cjs], project).trim() === "cjs ok",
      "CommonJS require printed something else",
    );
  } else console.log(`require(): skipped, Node ${process.version} does not load ES modules so`);

  // TypeScript: the types resolve through `exports`, the origin filter is typed.
  await writeFile(
    join(project, "check.mts"),
    `import { AirlockClient, type FileRecord } from "airlock-relay-sdk/node";
     import { AirlockError, type FileOrigin } from "airlock-relay-sdk";
     const origin: FileOrigin = "sandbox";
     export async function outputs(client: AirlockClient): Promise<FileRecord[]> {
       return client.listFiles({ sessionId: "ses_x", origin });
     }
     export const isRelayError = (error: unknown) => error instanceof AirlockError;
    `,
  );
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  try {
    run(
      process.execPath,
      [
        tsc,
        "--noEmit",
        "--strict",
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--target",
        "es2022",
        "--lib",
        "es2022,dom",
        "--types",
        "node",
        "--typeRoots",
        join(root, "node_modules/@types"),
        "check.mts",
      ],
      project,
    );
  } catch (error) {
    faults.push(`a TypeScript consumer does not compile:\n${error.stdout}${error.stderr}`);
  }

  const packedBytes = (await stat(tarball)).size;
  console.log(
    `sdk package: ${files.length} files, tarball ${(packedBytes / 1024).toFixed(1)} KiB, ` +
      `installed ${(bytes / 1024).toFixed(1)} KiB, no dependencies`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}

if (faults.length > 0) {
  for (const fault of faults) console.error(`check-sdk-pack: ${fault}`);
  process.exit(1);
}
console.log("check-sdk-pack: ok");

/** Bytes of every file under `dir`. */
async function treeBytes(dir) {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile())
      total += (await stat(join(entry.parentPath ?? entry.path, entry.name))).size;
  }
  return total;
}
