// A one-request upload whose answer is lost after the relay stored and registered the file:
// each shim retries with the same Idempotency-Key and gets that file, never a second one.
// Real relay (`wrangler dev`) behind a proxy that drops the first answer.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { relaySuite } from "../support/relay-suite";
import { startFlakyProxy, type FlakyProxy } from "./flaky-proxy";
import { relayEnv } from "./run-shim";
import { sentLine } from "./sent-line";
import { runDriver, shimDrivers, type ShimDriver } from "./shims";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

const suite = relaySuite({}, "airlock-single-upload-retry-");
let drivers: ShimDriver[];
let proxy: FlakyProxy;
/** How many more `POST /v1/single-uploads` reach the relay and lose their answer. */
let loseAnswers = 0;

beforeAll(async () => {
  drivers = (await shimDrivers(suite.dir)).filter((d) => d.name !== "posix");
  proxy = await startFlakyProxy(suite.relay.url, (method, path) => {
    if (method !== "POST" || path !== "/v1/single-uploads" || loseAnswers === 0) return undefined;
    loseAnswers--;
    return "lose-answer";
  });
});

afterAll(async () => {
  await proxy?.stop();
});

describe.each(["node", "python"])("the %s shim's one-request send", (name) => {
  it("gets the file the relay registered when the answer was lost: one file, byte-exact", async () => {
    const driver = drivers.find((d) => d.name === name)!;
    const { token } = await suite.relay.mintSession({ quotaBytes: 1_000_000 });
    const cwd = await mkdtemp(join(suite.dir, "work-"));
    const run = { env: relayEnv(proxy.url, token), cwd, home: cwd };
    const bytes = randomBytes(16 * 1024);
    const path = join(cwd, "report.bin");
    await writeFile(path, bytes);

    const first = proxy.log.length;
    loseAnswers = 1;
    const sent = sentLine(await runDriver(driver, ["send", path, "--json"], run));
    expect(proxy.log.slice(first)).toEqual([
      { request: "POST /v1/single-uploads", fault: "lose-answer" },
      { request: "POST /v1/single-uploads", fault: undefined },
    ]);
    expect(sent).toMatchObject({ name: "report.bin", size: bytes.length, sha256: sha256(bytes) });

    const listed = await runDriver(driver, ["ls", "--json"], run);
    expect(listed.stderr).toBe("");
    expect(listed.code).toBe(0);
    const files = listed.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { fileId: string; size: number });
    expect(files.map((f) => f.fileId)).toEqual([sent.fileId]);
    const fromRelay = await suite.api(token, "GET", "/v1/files");
    expect((fromRelay.body.files as { fileId: string }[]).map((f) => f.fileId)).toEqual([
      sent.fileId,
    ]);

    const content = await fetch(`${suite.relay.url}/v1/files/${sent.fileId}/content`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(content.status).toBe(200);
    expect(sha256(new Uint8Array(await content.arrayBuffer()))).toBe(sha256(bytes));
  });
});
