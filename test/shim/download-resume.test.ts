import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { mkdtemp, readFile, readdir, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RUNTIMES, SHIM, runShim } from "./run-shim";
import { shimScratchDir } from "./scratch-dir";

/**
 * `airlock get <shareUrl>` against a share link on 127.0.0.1 that serves a 4 MiB file with
 * Range and If-Range as the relay does, and can cut or stall its first answer: a retry and a new
 * run after SIGKILL carry on from the bytes already on disk instead of starting over.
 */

const MiB = 1024 * 1024;
const BYTES = randomBytes(4 * MiB);
const SHA256 = createHash("sha256").update(BYTES).digest("hex");
const NAME = "big.bin";
const PART = `.${NAME}.${SHA256.slice(0, 16)}.airlock-part`;

/** What the first GET does after 1.5 MiB: cut the connection, or stall (until the test ends). */
type FirstGet = "whole" | "reset" | "stall";

interface Seen {
  method: string;
  range?: string;
  ifRange?: string;
}

interface ShareServer {
  url: string;
  seen: Seen[];
  gets: () => Seen[];
  stop: () => Promise<void>;
}

async function startShareServer(first: FirstGet, honourRange = true): Promise<ShareServer> {
  const seen: Seen[] = [];
  let getCount = 0;
  const server = http.createServer((req, res) => {
    const range = req.headers.range;
    const ifRange = req.headers["if-range"]?.toString();
    seen.push({ method: req.method ?? "", range, ifRange });
    const etag = `"${SHA256}"`;
    const headers: Record<string, string> = {
      etag,
      "accept-ranges": "bytes",
      "content-type": "application/octet-stream",
      "content-disposition": `attachment; filename="${NAME}"`,
    };
    const match = /^bytes=(\d+)-$/.exec(range ?? "");
    const ranged = honourRange && match && (ifRange === undefined || ifRange === etag);
    const offset = ranged ? Number(match[1]) : 0;
    if (offset >= BYTES.length) {
      res.writeHead(416, { ...headers, "content-range": `bytes */${BYTES.length}` });
      res.end();
      return;
    }
    const body = BYTES.subarray(offset);
    headers["content-length"] = String(body.length);
    if (ranged) headers["content-range"] = `bytes ${offset}-${BYTES.length - 1}/${BYTES.length}`;
    res.writeHead(ranged ? 206 : 200, headers);
    if (req.method === "HEAD") return void res.end();
    if (getCount++ > 0 || first === "whole") return void res.end(body);
    res.write(body.subarray(0, 1.5 * MiB), () => {
      if (first === "reset") res.socket?.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/d/share-token`,
    seen,
    gets: () => seen.filter((s) => s.method === "GET"),
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const root = shimScratchDir("airlock-shim-resume-");

describe.each(RUNTIMES)("airlock get resumes under $name", ({ node }) => {
  let dir: string;
  let server: ShareServer | undefined;
  const env = { AIRLOCK_RETRIES: "3", AIRLOCK_RETRY_BASE_MS: "10" };
  const get = (args: string[]) => runShim(["get", ...args], { node, cwd: dir, env });

  beforeEach(async () => {
    dir = await mkdtemp(join(root(), "t-"));
  });

  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it("asks for the rest with Range after the connection resets mid-body", async () => {
    server = await startShareServer("reset");
    const result = await get([server.url]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${NAME}\n`);
    expect((await readFile(join(dir, NAME))).equals(BYTES)).toBe(true);
    const [first, second, ...rest] = server.gets();
    expect(first?.range).toBeUndefined();
    const offset = Number(/^bytes=(\d+)-$/.exec(second?.range ?? "")?.[1]);
    expect(offset).toBeGreaterThan(0);
    expect(offset).toBeLessThanOrEqual(1.5 * MiB);
    expect(second?.ifRange).toBe(`"${SHA256}"`);
    expect(rest).toEqual([]);
    expect(await readdir(dir)).toEqual([NAME]);
  });

  it("carries on from the part file a SIGKILLed run left behind", async () => {
    server = await startShareServer("stall");
    // The same environment runShim gives, as the relay's generated types declare theirs on it.
    const childEnv: Record<string, string | undefined> = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...env,
    };
    const child = spawn(node, [SHIM, "get", server.url], {
      cwd: dir,
      env: childEnv as NodeJS.ProcessEnv,
      stdio: "ignore",
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const part = join(dir, PART);
    for (let waited = 0; !(existsSync(part) && statSync(part).size > MiB); waited += 20) {
      if (waited > 20_000) throw new Error("the part file never passed 1 MiB");
      await sleep(20);
    }
    child.kill("SIGKILL");
    await exited;
    const kept = statSync(part).size;
    expect(server.gets()).toHaveLength(1);

    const result = await get([server.url]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect((await readFile(join(dir, NAME))).equals(BYTES)).toBe(true);
    const resumed = server.gets()[1];
    expect(resumed?.range).toBe(`bytes=${kept}-`);
    expect(resumed?.ifRange).toBe(`"${SHA256}"`);
    expect(server.gets()).toHaveLength(2);
    expect(await readdir(dir)).toEqual([NAME]);
  });

  it("throws away a part file the server refuses to resume (416) and downloads it whole", async () => {
    server = await startShareServer("whole");
    await writeFile(join(dir, PART), randomBytes(5 * MiB));
    const result = await get([server.url]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect((await readFile(join(dir, NAME))).equals(BYTES)).toBe(true);
    expect(server.gets().map((s) => s.range)).toEqual([`bytes=${5 * MiB}-`, undefined]);
    expect(await readdir(dir)).toEqual([NAME]);
  });

  it("still gets exact bytes from a server that ignores Range", async () => {
    server = await startShareServer("reset", false);
    const result = await get([server.url]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect((await readFile(join(dir, NAME))).equals(BYTES)).toBe(true);
    const gets = server.gets();
    expect(gets).toHaveLength(2);
    expect(gets[1]?.range).toMatch(/^bytes=[1-9]\d*-$/); // Asked, answered with 200: restarted.
    expect(await readdir(dir)).toEqual([NAME]);
  });

  it("never resumes onto stdout", async () => {
    server = await startShareServer("reset");
    const result = await get([server.url, "-o", "-"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^airlock: connection lost while writing big\.bin to stdout/);
    expect(server.seen.every((s) => s.range === undefined && s.method === "GET")).toBe(true);
    expect(await readdir(dir)).toEqual([]);
  });
});
