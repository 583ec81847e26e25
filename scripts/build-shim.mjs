#!/usr/bin/env node
// Bundles the shim (agent-shim/src) into one self-contained file, dist/airlock.mjs, and embeds
// it in src/shim/bundle.generated.ts so that the relay can serve it at GET /shim/airlock.mjs.
// The POSIX fallback, agent-shim/airlock.sh, and the Python shim, agent-shim/airlock.py, are
// embedded as they are (with their version set) for GET /shim/airlock.sh and /shim/airlock.py.
import { build } from "esbuild";
import { chmod, mkdir, readFile, readdir } from "node:fs/promises";
import { writeIfChanged } from "./write-if-changed.mjs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const outfile = `${root}dist/airlock.mjs`;
const generated = `${root}src/shim/bundle.generated.ts`;

/**
 * The Python and POSIX shims are each served as one file but written as parts by concern
 * (`agent-shim/python/NN-*.py`, `agent-shim/posix/NN-*.sh`): the file is the parts joined in
 * order, written to `agent-shim/airlock.py` / `airlock.sh` (not tracked; made by every build).
 */
async function concatenated(dir, extension) {
  const names = (await readdir(`${root}${dir}`)).filter((n) => n.endsWith(extension)).sort();
  const parts = await Promise.all(names.map((n) => readFile(`${root}${dir}/${n}`, "utf8")));
  return parts.join("");
}

const { version } = JSON.parse(await readFile(`${root}package.json`, "utf8"));

// One file that runs both as installed (an extensionless `airlock`, which Node takes for
// CommonJS: an ES module there fails on Node 18 and on Node 20 before 20.19) and as
// `airlock.mjs` (an ES module): a CommonJS bundle inside a function that is handed `require`,
// Node's own where there is one, else built from node:module. The bundle needs only Node's
// built-in modules.
const banner = [
  "#!/usr/bin/env node",
  "(function (airlock) {",
  '  if (typeof require === "function") airlock(require);',
  '  else import("node:module").then((m) => airlock(m.createRequire(process.execPath)));',
  "})(function (require) {",
].join("\n");
const footer = "});";

await build({
  entryPoints: [`${root}agent-shim/src/cli/cli.ts`],
  outfile,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node18",
  banner: { js: banner },
  footer: { js: footer },
  define: { __AIRLOCK_VERSION__: JSON.stringify(version) },
  legalComments: "none",
  logLevel: "warning",
});
await chmod(outfile, 0o755);

/** Loads a TypeScript module of this repository (bundled by esbuild) for what the build renders. */
async function load(entry, platform = "neutral") {
  const bundled = await build({
    entryPoints: [`${root}${entry}`],
    bundle: true,
    format: "esm",
    platform,
    write: false,
    logLevel: "warning",
  });
  const module = Buffer.from(bundled.outputFiles[0].text).toString("base64");
  return import(`data:text/javascript;base64,${module}`);
}

// The Python shim's MCP tools: generated from src/mcp/tool-definitions.ts into the block
// between its markers, so that both shims serve the one set of definitions.
const pyPath = `${root}agent-shim/airlock.py`;
const { toolsFor, STDIO_INSTRUCTIONS } = await load("src/mcp/tool-definitions.ts");
const served = { tools: toolsFor("stdio"), instructions: STDIO_INSTRUCTIONS };
// ASCII only (\u escapes), inside a raw triple-quoted string that json.loads reads.
const json = JSON.stringify(served, null, 1).replace(
  /[\u0080-\uffff]/g,
  (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
);
if (json.includes('"""')) throw new Error('an MCP tool definition holds """');
const block = /(# BEGIN generated MCP tools[^\n]*\n)[\s\S]*?(# END generated MCP tools)/;
const py = await concatenated("agent-shim/python", ".py");
if (!block.test(py)) throw new Error("agent-shim/python lacks its generated MCP tools block");

// The Python shim's usage lines and help pages: rendered from the Node shim's help
// (agent-shim/src/cli/help.ts, through python-help.ts) into the block between its markers, as
// Python literals (JSON strings of ASCII text are Python strings).
const { pythonHelp } = await load("agent-shim/src/cli/python-help.ts", "node");
const { usage, pages, help } = pythonHelp();
const helpBlock = /(# BEGIN generated help[^\n]*\n)[\s\S]*?(# END generated help)/;
if (!helpBlock.test(py)) throw new Error("agent-shim/python lacks its generated help block");
const literal = (value) => JSON.stringify(value, null, 4);
await writeIfChanged(
  pyPath,
  py
    .replace(
      block,
      (_, begin, end) => `${begin}MCP_SERVED = json.loads(r"""\n${json}\n""")\n${end}`,
    )
    .replace(
      helpBlock,
      (_, begin, end) =>
        `${begin}USAGE = ${literal(usage)}\nPAGES = ${literal(pages)}\nHELP = ${literal(help)}\n${end}`,
    ),
);
await chmod(pyPath, 0o755);
const shPath = `${root}agent-shim/airlock.sh`;
await writeIfChanged(shPath, await concatenated("agent-shim/posix", ".sh"));
await chmod(shPath, 0o755);

const source = await readFile(outfile, "utf8");
const shSource = (await readFile(shPath, "utf8")).replace(
  /^VERSION='[^']*'/m,
  `VERSION='${version}'`,
);
const pySource = (await readFile(pyPath, "utf8")).replace(
  /^VERSION = "[^"]*"/m,
  `VERSION = ${JSON.stringify(version)}`,
);
await mkdir(`${root}src/shim`, { recursive: true });
await writeIfChanged(
  generated,
  `// Generated by scripts/build-shim.mjs from agent-shim/src: do not edit.\n` +
    `export const SHIM_SOURCE: string = ${JSON.stringify(source)};\n` +
    `export const SHIM_VERSION = ${JSON.stringify(version)};\n` +
    `export const SHIM_SH_SOURCE: string = ${JSON.stringify(shSource)};\n` +
    `export const SHIM_PY_SOURCE: string = ${JSON.stringify(pySource)};\n`,
);

const kib = (Buffer.byteLength(source) / 1024).toFixed(1);
console.log(`built dist/airlock.mjs (${kib} KiB, v${version}) and src/shim/bundle.generated.ts`);
