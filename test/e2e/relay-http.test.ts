import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failureLine, prepareShim, runShim, SHIM } from "../shim/run-shim";
import { startRelay, type RunningRelay } from "../support/relay";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A GET that shows the wire as it is: no transparent decompression, unlike fetch. */
function rawGet(url: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks),
        }),
      );
    })
      .on("error", reject)
      .end();
  });
}

describe("the relay under wrangler dev, as clients see it", () => {
  let relay: RunningRelay;
  let dir: string;

  beforeAll(async () => {
    prepareShim();
    relay = await startRelay({ vars: { SESSION_QUOTA_BYTES: "100000" } });
    dir = await mkdtemp(join(tmpdir(), "airlock-relay-http-"));
  });
  afterAll(async () => {
    await relay?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function send(bytes: Uint8Array, name: string, token?: string) {
    const path = join(dir, name);
    await writeFile(path, bytes);
    const session = token ?? (await relay.mintSession()).token;
    return runShim(["send", path, "--json"], {
      env: { AIRLOCK_URL: relay.url, AIRLOCK_TOKEN: session },
    });
  }

  it("serves share links byte-exact with Content-Length even to clients that accept gzip", async () => {
    const text = Buffer.from(
      `${randomBytes(8).toString("hex")}\n${"log line with words\n".repeat(3000)}`,
    );
    const sent = await send(text, "log.txt");
    expect(sent.code).toBe(0);
    const { url } = JSON.parse(sent.stdout) as { url: string };
    const whole = await rawGet(url, { "accept-encoding": "gzip, br" });
    expect(whole.status).toBe(200);
    expect(whole.headers["content-encoding"]).not.toMatch(/gzip|br/);
    expect(whole.headers["content-length"]).toBe(String(text.byteLength));
    expect(sha256(whole.body)).toBe(sha256(text));
    const part = await rawGet(url, { "accept-encoding": "gzip", range: "bytes=100-199" });
    expect(part.status).toBe(206);
    expect(part.headers["content-range"]).toBe(`bytes 100-199/${text.byteLength}`);
    expect(part.body.equals(text.subarray(100, 200))).toBe(true);
  });

  it("serves its own shim, which installs with one curl-style download and runs", async () => {
    const served = await rawGet(`${relay.url}/shim/airlock.mjs`);
    expect(served.status).toBe(200);
    expect(served.body.equals(await readFile(SHIM))).toBe(true);
    const installed = join(dir, "airlock");
    await writeFile(installed, served.body);
    await chmod(installed, 0o755);
    const { execFileSync } = await import("node:child_process");
    expect(execFileSync(installed, ["--version"]).toString().trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("refuses a revoked session's token at once, with one line from the shim", async () => {
    const session = await relay.mintSession();
    await fetch(`${relay.url}/v1/sessions/${session.sessionId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${relay.adminToken}` },
    });
    const refused = await send(randomBytes(100), "late.bin", session.token);
    expect(refused.code).toBe(1);
    expect(failureLine(refused)).toContain("session_revoked");
  });

  it("refuses a file over the session quota before uploading, and nothing is listed", async () => {
    const session = await relay.mintSession();
    const refused = await send(randomBytes(150_000), "big.bin", session.token);
    expect(refused.code).toBe(1);
    expect(failureLine(refused)).toContain("quota_exceeded");
    const listed = await fetch(`${relay.url}/v1/files`, {
      headers: { authorization: `Bearer ${session.token}` },
    });
    expect(await listed.json()).toEqual({ files: [] });
  });
});
