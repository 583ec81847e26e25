import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { humanSize, parseSize } from "../../src/services/human-size";
import { humanSize as sdkHumanSize, parseSize as sdkParseSize } from "../../sdk/src/index";
import { prepareShim } from "./run-shim";
import { busyboxOnlyPath, POSIX_SHIM, processEnv, PYTHON_SHIM, required } from "./shims";

const root = fileURLToPath(new URL("../..", import.meta.url));
const { print, parse } = JSON.parse(
  readFileSync(join(root, "test/human-size-cases.json"), "utf8"),
) as { print: [number, string][]; parse: [string, number | null][] };
const CASES = { print, parse };

/** Runs a Python program that prints the cases' answers as one JSON object. */
function fromPython(setup: string, env: Record<string, string> = {}) {
  const program = `${setup}
import json, sys
cases = json.load(open(sys.argv[1]))
print(json.dumps({"print": [[b, human_size(b)] for b, _ in cases["print"]],
                  "parse": [[t, parse_size(t)] for t, _ in cases["parse"]]}))`;
  const out = execFileSync("python3", ["-c", program, join(root, "test/human-size-cases.json")], {
    encoding: "utf8",
    env: processEnv({ PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }),
  });
  return JSON.parse(out) as typeof CASES;
}

/**
 * The one unit rule (binary: K, M, G, T are powers of 1024; printed as KiB, MiB, ...), one
 * implementation per language, each checked against test/human-size-cases.json: the TypeScript
 * one the relay, its pages, the Node shim and the TypeScript SDK share; the upload page's bundled
 * copy as the browser runs it; the Python shim's; the Python SDK's; the POSIX shim's under dash
 * (mawk) and busybox awk.
 */
describe("sizes for people: one rule, the same answers everywhere", () => {
  let dir: string;
  beforeAll(() => {
    prepareShim();
    dir = mkdtempSync(join(tmpdir(), "airlock-human-size-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("TypeScript: the relay, the Node shim and the SDK (one module)", () => {
    expect(CASES.print.map(([bytes]) => [bytes, humanSize(bytes)])).toEqual(CASES.print);
    expect(CASES.parse.map(([text]) => [text, parseSize(text)])).toEqual(CASES.parse);
    expect(sdkHumanSize).toBe(humanSize);
    expect(sdkParseSize).toBe(parseSize);
  });

  it("the upload page's script, as bundled for the browser", async () => {
    const { SHA256_SCRIPT } = await import("../../src/http/upload-page/sha256.generated");
    const shown = runInNewContext(
      `${SHA256_SCRIPT}; cases.map(function (c) { return [c[0], pageSha256.humanSize(c[0])]; })`,
      { cases: CASES.print },
    ) as unknown;
    expect(JSON.parse(JSON.stringify(shown))).toEqual(CASES.print);
  });

  it("the Python shim and the Python SDK", () => {
    const shim = `import importlib.util
spec = importlib.util.spec_from_file_location("airlock_shim", ${JSON.stringify(PYTHON_SHIM)})
shim = importlib.util.module_from_spec(spec)
spec.loader.exec_module(shim)
human_size, parse_size = shim.human_size, shim.parse_size`;
    expect(fromPython(shim)).toEqual(CASES);
    const sdk = "from airlock_sdk import human_size, parse_size";
    expect(fromPython(sdk, { PYTHONPATH: join(root, "sdk-python/src") })).toEqual(CASES);
  });

  it("the POSIX shim, under dash with the system awk and with busybox awk", async () => {
    const source = readFileSync(POSIX_SHIM, "utf8");
    const definition = (name: string) =>
      new RegExp(`^${name}\\(\\) \\{\n[\\s\\S]*?\n\\}\n`, "m").exec(source)?.[0] ?? "";
    const script = `${definition("human_size")}${definition("parse_size")}
for b in "$@"; do case $b in p:*) parse_size "\${b#p:}" || printf null ;; *) human_size "$b" ;; esac; echo; done`;
    const args = [...CASES.print.map(([b]) => String(b)), ...CASES.parse.map(([t]) => `p:${t}`)];
    const expected = [
      ...CASES.print.map(([, text]) => text),
      ...CASES.parse.map(([, bytes]) => String(bytes)),
    ];
    const busybox = await busyboxOnlyPath(dir, required("busybox"), required("curl"));
    for (const path of [process.env.PATH ?? "/usr/bin:/bin", busybox]) {
      const out = execFileSync(required("dash"), ["-c", script, "sh", ...args], {
        encoding: "utf8",
        env: processEnv({ PATH: path }),
      });
      expect(out.split("\n").slice(0, -1)).toEqual(expected);
    }
  });
});
