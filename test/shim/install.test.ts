import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selfSignedCertificate } from "../support/self-signed-certificate";
import { sharedRelay } from "../support/shared-relay";
import { TOKEN, startFakeRelay, type FakeRelay } from "./fake-relay";
import { RUNTIMES, SHIM, collectRun, failureLine, prepareShim, relayEnv } from "./run-shim";
import { processEnv } from "./shims";

/**
 * The Node shim as the README installs it: fetched to a file named `airlock` (no extension),
 * made executable and run through its `#!/usr/bin/env node` line, under every supported Node.
 * Node takes an extensionless file for CommonJS; an ES module there fails on Node 18 (and on
 * Node 20 before 20.19) with "Cannot use import statement outside a module".
 */

const root = fileURLToPath(new URL("../..", import.meta.url));
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

let scratch = "";
let shimServer: http.Server | undefined;
let shimUrl = "";
let version = "";
let tls: { key: string; cert: string; certFile: string };

beforeAll(async () => {
  prepareShim();
  scratch = await mkdtemp(join(tmpdir(), "airlock-install-"));
  ({ version } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
    version: string;
  });
  // The relay serves the bundle as it is built (test/e2e/relay-http checks that it does).
  const bundle = await readFile(SHIM);
  shimServer = http.createServer((req, res) => {
    if (req.url !== "/shim/airlock.mjs") return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
  });
  await new Promise<void>((resolve) => shimServer!.listen(0, "127.0.0.1", resolve));
  shimUrl = `http://127.0.0.1:${(shimServer.address() as AddressInfo).port}`;
  tls = selfSignedCertificate(scratch);
}, 120_000);

afterAll(async () => {
  await new Promise((resolve) => shimServer?.close(resolve));
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** The README's install line, with its destination moved into `bin`; returns the shim's path. */
async function install(bin: string): Promise<string> {
  const readme = await readFile(join(root, "README.md"), "utf8");
  const line = /^curl -fsSL "\$AIRLOCK_URL\/shim\/airlock\.mjs" .*$/m.exec(readme)?.[0];
  expect(line).toBeDefined();
  expect(line!.split("/usr/local/bin/airlock")).toHaveLength(3);
  const target = join(bin, "airlock");
  // Not spawnSync: the bundle's server runs in this process.
  const run = await collectRun(
    spawn("sh", ["-c", line!.split("/usr/local/bin/airlock").join(target)], {
      env: processEnv({ PATH: process.env.PATH, AIRLOCK_URL: shimUrl }),
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  return target;
}

describe.each(RUNTIMES)("the installed Node shim under $name", ({ node }) => {
  let target = "";
  /** `airlock ...args` through its shebang, with this runtime first on PATH. */
  const airlock = (args: string[], env: Record<string, string> = {}, cwd = scratch) =>
    collectRun(
      spawn(target, args, {
        cwd,
        env: processEnv({ PATH: `${dirname(node)}:${process.env.PATH}`, HOME: scratch, ...env }),
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 60_000,
      }),
    );

  beforeAll(async () => {
    const bin = await mkdtemp(join(scratch, "bin-"));
    target = await install(bin);
  });

  it("runs from the file the README's line installs", async () => {
    expect(await readFile(target)).toEqual(await readFile(SHIM));
    const shown = await airlock(["--version"]);
    expect(shown).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: "" });
    const which = spawnSync("sh", ["-c", "node --version"], {
      env: processEnv({ PATH: `${dirname(node)}:${process.env.PATH}` }),
      encoding: "utf8",
    });
    expect(which.stdout.trim()).toBe(
      spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim(),
    );
  });

  it("sends a file byte for byte, over http and over https", async () => {
    const bytes = randomBytes(300_000);
    const dir = await mkdtemp(join(scratch, "send-"));
    await writeFile(join(dir, "report.bin"), bytes);
    // Over http to the real relay (the run's shared one): the bytes its share link serves.
    const shared = sharedRelay();
    const { token } = await shared.mintSession();
    const plain = await airlock(["send", "report.bin", "--json"], relayEnv(shared.url, token), dir);
    expect(plain.stderr).toBe("");
    expect(plain.code).toBe(0);
    const { url } = JSON.parse(plain.stdout) as { url: string };
    expect(sha256(Buffer.from(await (await fetch(url)).arrayBuffer()))).toBe(sha256(bytes));
    // Over https to the fake relay: the one that listens on TLS with a certificate of our own.
    const relay: FakeRelay = await startFakeRelay({ tls });
    try {
      const env = { ...relayEnv(relay.url, TOKEN), NODE_EXTRA_CA_CERTS: tls.certFile };
      const sent = await airlock(["send", "report.bin", "--json"], env, dir);
      expect(sent.stderr).toBe("");
      expect(sent.code).toBe(0);
      expect(relay.url.startsWith("https://")).toBe(true);
      const { fileId } = JSON.parse(sent.stdout) as { fileId: string };
      expect(sha256(relay.files.get(fileId)!.bytes)).toBe(sha256(bytes));
    } finally {
      await relay.stop();
    }
  });

  it("refuses an https relay it cannot trust with one line and exit 1", async () => {
    const relay = await startFakeRelay({ tls });
    try {
      const dir = await mkdtemp(join(scratch, "untrusted-"));
      await writeFile(join(dir, "a.txt"), "hello\n");
      const sent = await airlock(["send", "a.txt"], relayEnv(relay.url, TOKEN), dir);
      expect(sent.code).toBe(1);
      expect(sent.stdout).toBe("");
      expect(failureLine(sent)).toMatch(/certificate/);
      expect(relay.files.size).toBe(0);
    } finally {
      await relay.stop();
    }
  });
});

it("is one file the relay serves both as installed and as airlock.mjs", async () => {
  const asModule = spawnSync(process.execPath, [SHIM, "--version"], { encoding: "utf8" });
  expect(asModule).toMatchObject({ status: 0, stdout: `${version}\n`, stderr: "" });
});
