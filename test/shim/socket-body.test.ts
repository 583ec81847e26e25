import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { drain } from "../../agent-shim/src/download/body-sink";
import { request } from "../../agent-shim/src/transport/http";

/**
 * A body taken straight off the socket (`request({ direct: true })`, then `drain`) against a
 * real HTTP server: whole bodies land byte-exact however the server splits them, also when the
 * sink comes late; a cut body rejects with every byte taken already on disk (a resume starts
 * there); an answer that is not a plain body (chunked) is read by node:http as before.
 */

const BODY = randomBytes(3 * 1024 * 1024 + 77);
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("a body taken off the socket", () => {
  let server: Server;
  let base: string;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "airlock-socket-body-"));
    server = createServer((req, res) => {
      const size = Number(new URL(req.url!, "http://x").searchParams.get("size") ?? BODY.length);
      const body = BODY.subarray(0, size);
      if (req.url!.startsWith("/chunked")) {
        res.writeHead(200, { "transfer-encoding": "chunked" });
        return void res.end(body);
      }
      res.writeHead(200, { "content-length": body.length });
      if (req.url!.startsWith("/whole")) return void res.end(body);
      if (req.url!.startsWith("/cut")) {
        return void res.write(body.subarray(0, 70_000), () => res.socket?.destroy());
      }
      // Dribbled: the head alone, then the body in uneven pieces.
      res.flushHeaders();
      void (async () => {
        for (let at = 0; at < body.length; at += 9_999) {
          res.write(body.subarray(at, at + 9_999));
          if (at % 7 === 0) await sleep(1);
        }
        res.end();
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  /** GETs `path` with a direct body and drains it into a new file; the file's bytes. */
  const fetchTo = async (path: string, wait: number) => {
    const file = join(dir, `${Math.random()}.bin`);
    const handle = await open(file, "w");
    const seen = createHash("sha256");
    const res = await request({ method: "GET", url: base + path, direct: true });
    if (wait > 0) await sleep(wait);
    try {
      const written = await drain(res, handle, 0, (chunk) => void seen.update(chunk));
      return { written, seen: seen.digest("hex"), bytes: await readFile(file) };
    } finally {
      await handle.close();
    }
  };

  it("lands byte-exact, sink attached at once or late, small and large, sequential and at once", async () => {
    const cases = ["/whole", "/dribble", "/whole?size=20000", "/dribble?size=20000"];
    for (const wait of [0, 50]) {
      for (const path of cases) {
        const got = await fetchTo(path, wait);
        const size = Number(new URL(path, base).searchParams.get("size") ?? BODY.length);
        const want = sha256(BODY.subarray(0, size));
        expect([got.written, sha256(got.bytes), got.seen], `${path} after ${wait} ms`).toEqual([
          size,
          want,
          want,
        ]);
      }
      const together = await Promise.all(cases.map((path) => fetchTo(path, wait)));
      expect(together.map((got) => got.bytes.length)).toEqual([
        BODY.length,
        BODY.length,
        20000,
        20000,
      ]);
    }
  });

  it("rejects a cut body with every byte it took on disk", async () => {
    for (const wait of [0, 200]) {
      const file = join(dir, `cut-${wait}.bin`);
      const handle = await open(file, "w");
      let taken = 0;
      const res = await request({ method: "GET", url: `${base}/cut`, direct: true });
      if (wait > 0) await sleep(wait);
      const outcome = await drain(res, handle, 0, (chunk) => void (taken += chunk.length)).then(
        (bytes) => `resolved ${bytes}`,
        (err: unknown) => `rejected ${(err as { code?: string }).code}`,
      );
      await handle.close();
      const bytes = await readFile(file);
      expect(outcome, `attached after ${wait} ms`).toBe("rejected ECONNRESET");
      expect(bytes.length).toBe(taken);
      expect(sha256(bytes)).toBe(sha256(BODY.subarray(0, taken)));
    }
  });

  it("leaves a chunked answer to node:http", async () => {
    const file = join(dir, "chunked.bin");
    const handle = await open(file, "w");
    const again = await request({ method: "GET", url: `${base}/chunked`, direct: true });
    await drain(again, handle, 0, () => {}).finally(() => handle.close());
    expect(sha256(await readFile(file))).toBe(sha256(BODY));
  });
});
