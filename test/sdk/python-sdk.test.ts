import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakePlatforms, type FakePlatforms } from "../fixtures/platforms/start-fake-platforms";
import { prepareShim, SHIM } from "../shim/run-shim";
import { cleanFileName } from "../../src/names";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import {
  PROBE_SCRIPT,
  chunkScript,
  chunkedFinishScript,
  chunkedOpenScript,
  collectScript,
  commandsFor,
  pushScript,
  type Tool,
} from "../../sdk/src/exec/sandbox-scripts";
import { startSshd, type TestSshd } from "./sshd";
import { installStandIns } from "./stand-in-cli";

/**
 * The Python SDK's tests (sdk-python/tests, the standard library's unittest) and the recipes'
 * (docs/hosts), run by `npm test` through this file: it starts what they run against (`wrangler
 * dev` whose Telegram bot is the fake Telegram server's, the stand-in docker / kubectl, a real
 * sshd) and hands them the addresses in the environment. Each Python test module is one test.
 */
const root = fileURLToPath(new URL("../..", import.meta.url));
const MODULES = ["test_client", "test_exec", "test_exec_cases", "test_recipes"];

let fakes: FakePlatforms;
let sshd: TestSshd;
let dir: string;
let shared: Record<string, string>;

beforeAll(async () => {
  prepareShim();
  fakes = await startFakePlatforms();
  sshd = await startSshd();
  dir = await mkdtemp(join(tmpdir(), "airlock-python-"));
  const bin = join(dir, "stand-in-bin");
  await installStandIns(bin);
  shared = {
    AIRLOCK_TEST_DIR: dir,
    AIRLOCK_TEST_STANDIN_BIN: bin,
    AIRLOCK_TEST_SHIM: SHIM,
    AIRLOCK_TEST_SSH: JSON.stringify(sshd),
    AIRLOCK_TEST_TELEGRAM: JSON.stringify({
      apiRoot: fakes.telegram.url,
      token: fakes.telegram.token,
      controlOrigin: fakes.telegram.url,
    }),
    PYTHONPATH: [join(root, "sdk-python/src"), join(root, "docs/hosts")].join(":"),
    PYTHONDONTWRITEBYTECODE: "1",
  };
}, 180_000);

afterAll(async () => {
  await sshd?.stop();
  await fakes?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** `wrangler dev` on a backend, its Telegram bot the fake's (the gateway recipe's bot). */
async function relayOn(storage: "r2" | "s3"): Promise<{ relay: RunningRelay; s3?: StrictS3 }> {
  const s3 = storage === "s3" ? await startStrictS3() : undefined;
  const relay = await startRelay({
    storage,
    vars: {
      TELEGRAM_BOT_TOKEN: fakes.telegram.token,
      TELEGRAM_WEBHOOK_SECRET: "python-telegram-webhook-secret",
      TELEGRAM_API_ROOT: fakes.telegram.url,
      ...(s3 ? s3Vars(s3) : {}),
    },
  });
  return { relay, ...(s3 ? { s3 } : {}) };
}

/** Runs `python3 -m unittest -v <module>`; resolves with its exit code and output. */
function unittest(
  module: string,
  env: Record<string, string>,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("python3", ["-m", "unittest", "-v", module], {
      cwd: join(root, "sdk-python/tests"),
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

/** The sandbox scripts of both SDKs for one set of tools the sandbox has. */
function scriptsOf(tools: Tool[]): Record<string, string> {
  const commands = commandsFor(new Set(tools));
  const out: Record<string, string> = { probe: PROBE_SCRIPT };
  if (commands.sha256) {
    const hashing = { ...commands, sha256: commands.sha256 };
    out.push = pushScript(hashing);
    out.open = chunkedOpenScript(hashing);
    out.finish = chunkedFinishScript(hashing);
    out.collect = collectScript(hashing);
  }
  if (commands.decodeBase64)
    out.chunk = chunkScript({ ...commands, decodeBase64: commands.decodeBase64 });
  return out;
}

const PYTHON_SCRIPTS = `
import json, sys
from airlock_sdk.exec import scripts as s
c = s.commands_for(frozenset(sys.argv[1:]))
out = {"probe": s.PROBE_SCRIPT}
if c.sha256:
    out.update(push=s.push_script(c), open=s.chunked_open_script(c), finish=s.chunked_finish_script(c), collect=s.collect_script(c))
if c.decode_base64:
    out["chunk"] = s.chunk_script(c)
print(json.dumps(out))
`;

describe("the Python SDK and the host recipes (python3 -m unittest)", () => {
  it.each([
    [["sha256sum", "openssl", "python3", "node", "gzip", "base64"]],
    [["python3"]],
    [["node"]],
    [["sha256sum"]],
    [[]],
  ] as Tool[][][])(
    "runs the TypeScript SDK's sandbox scripts, byte for byte, in a sandbox with %j",
    (tools) => {
      const python = spawnSync("python3", ["-c", PYTHON_SCRIPTS, ...tools], {
        env: { ...process.env, PYTHONPATH: join(root, "sdk-python/src") },
        encoding: "utf8",
      });
      expect(python.status, python.stderr).toBe(0);
      expect(JSON.parse(python.stdout)).toEqual(scriptsOf(tools));
    },
  );
});

/** Names a relay may hand out, or a person may send: the cases where the rule does something. */
const NAMES = [
  "report.pdf",
  "../../etc/passwd",
  "..\\..\\windows\\evil.exe",
  "a\u202egnp.exe",
  "zero\u200bwidth\ufeff.txt",
  "tag\u{e0041}\u{e0042}s.txt",
  "line\nbreak\r.txt",
  "  spaced  ",
  "...",
  "/",
  "",
  ".env",
  `${"x".repeat(300)}.tar.gz`,
  `${"é".repeat(200)}.csv`,
  `${"y".repeat(250)}.${"z".repeat(40)}`,
  "emoji \u{1f600} ok.txt",
];

/** Exits 0 where the system's pip can install into another interpreter (`--python`, pip 22.3). */
const SYSTEM_PIP_PROBE =
  "import setuptools, pip, sys; sys.exit(tuple(map(int, pip.__version__.split('.')[:2])) < (22, 3))";

describe("the Python package", () => {
  it("cleans names exactly as the relay's name rule does", () => {
    const python = spawnSync(
      "python3",
      [
        "-c",
        "import json, sys\nfrom airlock_sdk.names import clean_file_name\nprint(json.dumps([clean_file_name(n, 'file') for n in json.load(sys.stdin)]))",
      ],
      {
        env: { ...process.env, PYTHONPATH: join(root, "sdk-python/src") },
        input: JSON.stringify(NAMES),
        encoding: "utf8",
      },
    );
    expect(python.status, python.stderr).toBe(0);
    expect(JSON.parse(python.stdout)).toEqual(NAMES.map((name) => cleanFileName(name, "file")));
  });

  it("installs with pip offline (--no-index --no-build-isolation), pulling in nothing", () => {
    const venv = join(dir, "venv");
    const run = (command: string, args: string[]) => {
      const done = spawnSync(command, args, { cwd: join(dir), encoding: "utf8", timeout: 120_000 });
      expect(done.status, `${done.stdout}\n${done.stderr}`).toBe(0);
      return done.stdout;
    };
    // Where the system's python3 has pip and setuptools, a venv without a pip of its own
    // (seeding one costs more than the rest of this test): that pip installs into it
    // (`--python`), with the system's setuptools, seen through --system-site-packages, as the
    // build backend --no-build-isolation needs. Otherwise a venv seeded with pip, as usual.
    const systemPip =
      spawnSync("python3", ["-c", SYSTEM_PIP_PROBE], { stdio: "ignore" }).status === 0;
    const python = join(venv, "bin/python");
    run("python3", [
      "-m",
      "venv",
      ...(systemPip ? ["--without-pip", "--system-site-packages"] : []),
      venv,
    ]);
    const pip = (...args: string[]) =>
      systemPip
        ? run("python3", ["-m", "pip", "--python", python, ...args])
        : run(python, ["-m", "pip", ...args]);
    const before = pip("freeze", "--all");
    pip("install", "--no-index", "--no-build-isolation", join(root, "sdk-python"));
    const after = pip("freeze", "--all");
    expect(after.split("\n").filter((line) => line && !before.includes(line))).toEqual([
      `airlock-sdk @ file://${join(root, "sdk-python")}`,
    ]);
    // Imported from the install, not the checkout: the package, its exec transport, py.typed.
    const where = run(python, [
      "-c",
      "import airlock_sdk, airlock_sdk.exec, pathlib; p = pathlib.Path(airlock_sdk.__file__).parent; print(p, (p / 'py.typed').exists())",
    ]).trim();
    expect(where.startsWith(join(venv, "lib"))).toBe(true);
    expect(where.endsWith("/site-packages/airlock_sdk True")).toBe(true);
  }, 180_000);
});

/**
 * On s3 the client's downloads follow the relay's redirect to the store (without the bearer);
 * the exec and recipe modules move the same bytes either way and run on r2 only (time).
 */
describe.each([
  ["r2", MODULES],
  ["s3", ["test_client"]],
] as const)("on the %s backend", (storage, modules) => {
  let running: { relay: RunningRelay; s3?: StrictS3 };
  let env: Record<string, string>;
  beforeAll(async () => {
    running = await relayOn(storage);
    env = {
      ...shared,
      AIRLOCK_TEST_URL: running.relay.url,
      AIRLOCK_TEST_ADMIN_TOKEN: running.relay.adminToken,
    };
  }, 180_000);
  afterAll(async () => {
    await running?.relay.stop();
    await running?.s3?.stop();
  });

  it.each(modules)(
    "python3 -m unittest %s passes, none skipped",
    async (module) => {
      const { code, output } = await unittest(module, env);
      expect(code, output).toBe(0);
      expect(output, output).toMatch(/^OK$/m);
      expect(output, output).not.toMatch(/skipped/);
      expect(Number(/^Ran (\d+) tests? in/m.exec(output)?.[1]), output).toBeGreaterThan(0);
      if (process.env.AIRLOCK_PYTHON_VERBOSE) console.log(output);
    },
    600_000,
  );
});
