import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakePlatforms, type FakePlatforms } from "../fixtures/platforms/start-fake-platforms";
import { prepareShim, SHIM } from "../shim/run-shim";
import { startRelay, type RunningRelay } from "../support/relay";
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
let relay: RunningRelay;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  prepareShim();
  fakes = await startFakePlatforms();
  sshd = await startSshd();
  relay = await startRelay({
    vars: {
      TELEGRAM_BOT_TOKEN: fakes.telegram.token,
      TELEGRAM_WEBHOOK_SECRET: "python-telegram-webhook-secret",
      TELEGRAM_API_ROOT: fakes.telegram.url,
    },
  });
  dir = await mkdtemp(join(tmpdir(), "airlock-python-"));
  const bin = join(dir, "stand-in-bin");
  await installStandIns(bin);
  env = {
    AIRLOCK_TEST_URL: relay.url,
    AIRLOCK_TEST_ADMIN_TOKEN: relay.adminToken,
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
  await relay?.stop();
  await sshd?.stop();
  await fakes?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Runs `python3 -m unittest -v <module>`; resolves with its exit code and output. */
function unittest(module: string): Promise<{ code: number; output: string }> {
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

  it.each(MODULES)(
    "%s passes, none skipped",
    async (module) => {
      const { code, output } = await unittest(module);
      expect(code, output).toBe(0);
      expect(output, output).toMatch(/^OK$/m);
      expect(output, output).not.toMatch(/skipped/);
      expect(Number(/^Ran (\d+) tests? in/m.exec(output)?.[1]), output).toBeGreaterThan(0);
      if (process.env.AIRLOCK_PYTHON_VERBOSE) console.log(output);
    },
    600_000,
  );
});
