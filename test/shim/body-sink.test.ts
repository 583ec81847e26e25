import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import { createServer, get, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { drain } from "../../agent-shim/src/download/body-sink";

/**
 * The shim's download sink (`drain`) against a real HTTP server: a body of several write
 * batches lands byte-exact; one cut off mid-way rejects, also when the cut happened before the
 * sink was attached (get and pull await the destination between a response's head and its body).
 */

const BODY = randomBytes(5 * 1024 * 1024 + 123);
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("drain", () => {
  let server: Server;
  let base: string;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "airlock-body-sink-"));
    server = createServer((req, res) => {
      res.writeHead(200, { "content-length": BODY.length });
      if (req.url === "/whole") return void res.end(BODY);
      res.write(BODY.subarray(0, 50_000), () => res.socket?.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  const fetchHead = (path: string) =>
    new Promise<IncomingMessage>((resolve, reject) =>
      get(base + path, resolve).on("error", reject),
    );

  it("writes a body of several batches byte-exact, each chunk seen first", async () => {
    const path = join(dir, "whole.bin");
    const file = await open(path, "w");
    const seen = createHash("sha256");
    let batches = 0;
    const res = await fetchHead("/whole");
    const written = await drain(
      res,
      file,
      0,
      (chunk) => void seen.update(chunk),
      () => void batches++,
    ).finally(() => file.close());
    expect(written).toBe(BODY.length);
    expect(sha256(await readFile(path))).toBe(sha256(BODY));
    expect(seen.digest("hex")).toBe(sha256(BODY));
    expect(batches).toBeGreaterThan(1);
  });

  it("rejects a body cut off mid-way, attached at once or after the cut", async () => {
    for (const late of [false, true]) {
      const file = await open(join(dir, `cut-${late}.bin`), "w");
      const res = await fetchHead("/cut");
      if (late) await sleep(200);
      const outcome = await drain(res, file, 0, () => {}).then(
        (bytes) => `resolved ${bytes}`,
        (err: unknown) => `rejected ${(err as { code?: string }).code}`,
      );
      await file.close();
      expect(outcome, `attached ${late ? "after" : "before"} the cut`).toMatch(/^rejected /);
    }
  });
});
