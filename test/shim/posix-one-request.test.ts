// The POSIX shim sends a file of at most SINGLE_UPLOAD_MAX_BYTES in one request
// (`POST /v1/single-uploads`), as the Node and Python shims do, under dash and under busybox sh
// with only busybox's applets and curl, against the real relay (`wrangler dev`) behind a
// recording proxy: the requests each run made are asserted exactly.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { SINGLE_UPLOAD_MAX_BYTES } from "../../src/services/single-upload-limit";
import { relaySuite } from "../support/relay-suite";
import { startFlakyProxy, type FlakyProxy } from "./flaky-proxy";
import { failureLine, relayEnv, type ShimResult } from "./run-shim";
import { sentLine } from "./sent-line";
import {
  POSIX_SHIM,
  busyboxOnlyPath,
  runDriver,
  shimDrivers,
  which,
  type ShimDriver,
} from "./shims";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

const ONE_REQUEST = ["POST /v1/single-uploads"];
/** Declare, PUT (through the relay, r2), complete: the POSIX shim makes no probe first. */
const DECLARED = ["POST /v1/uploads", "PUT /v1/blob-uploads/:id", "POST /v1/uploads/:id/complete"];
const NOT_FOUND = {
  status: 404,
  body: JSON.stringify({ error: { code: "not_found", message: "no such route" } }),
};
const suite = relaySuite({}, "airlock-posix-one-request-");
let node: ShimDriver;
const shells: ShimDriver[] = [];
let proxy: FlakyProxy;
/** While set, the proxy answers `POST /v1/single-uploads` as a relay without the route does. */
let withoutRoute = false;
/** How many more `POST /v1/single-uploads` the proxy answers with a 503 of its own. */
let unavailable = 0;

beforeAll(async () => {
  const drivers = await shimDrivers(suite.dir);
  node = drivers.find((d) => d.name === "node")!;
  const dash = drivers.find((d) => d.name === "posix")!;
  const busybox = which("busybox");
  const curl = which("curl");
  if (!busybox || !curl) throw new Error("busybox and curl are required (npm test installs them)");
  const bin = await busyboxOnlyPath(suite.dir, busybox, curl);
  shells.push(dash, { ...dash, argv: [busybox, "sh", POSIX_SHIM], path: bin });
  proxy = await startFlakyProxy(suite.relay.url, (method, path) => {
    if (method !== "POST" || path !== "/v1/single-uploads") return undefined;
    if (withoutRoute) return NOT_FOUND;
    if (unavailable === 0) return undefined;
    unavailable--;
    return { status: 503, body: "" };
  });
});

afterAll(async () => {
  await proxy?.stop();
});

/** A fresh session (its own dedup scope) reached through the proxy, and a work directory. */
async function session(mint: object = {}) {
  const { token } = await suite.relay.mintSession(mint);
  const cwd = await mkdtemp(join(suite.dir, "work-"));
  return { token, cwd, env: relayEnv(proxy.url, token) };
}

type Session = Awaited<ReturnType<typeof session>>;

/** The route of a logged request, its ids replaced by `:id`, with the proxy's answer if faked. */
function route({ request, fault }: FlakyProxy["log"][number]): string {
  const shape = request
    .replace(/^(PUT \/v1\/blob-uploads\/).+$/, "$1:id")
    .replace(/^(POST \/v1\/uploads\/)[^/]+(\/complete)$/, "$1:id$2");
  return fault === undefined ? shape : `${shape} -> ${fault}`;
}

/** Runs a shim through the proxy (with `input` on its standard input when given). */
async function run(
  driver: ShimDriver,
  args: string[],
  at: Session,
  input?: Buffer,
): Promise<{ result: ShimResult; requests: string[] }> {
  const first = proxy.log.length;
  const result = await runDriver(driver, args, { env: at.env, cwd: at.cwd, home: at.cwd, input });
  return { result, requests: proxy.log.slice(first).map(route) };
}

/** Writes `bytes` as `name` in the session's work directory. */
async function fileIn(at: Session, name: string, bytes: Buffer): Promise<void> {
  await writeFile(join(at.cwd, name), bytes);
}

/** The bytes a share link serves. */
async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/** The session's files, as `GET /v1/files` lists them. */
async function listed(at: Session): Promise<unknown> {
  const answer = await suite.api(at.token, "GET", "/v1/files");
  expect(answer.status).toBe(200);
  return answer.body;
}

describe.each([0, 1])("the POSIX shim's one-request send (shell %i)", (index) => {
  const shell = () => shells[index]!;

  it("sends 16 KiB of random bytes with a UTF-8 name in one request, byte-exact, as Node does", async () => {
    const bytes = randomBytes(16 * 1024);
    const name = "résumé 2026.bin";
    const sent: SendResult[] = [];
    for (const driver of [node, shell()]) {
      const at = await session();
      await fileIn(at, name, bytes);
      const { result, requests } = await run(driver, ["send", "--json", name], at);
      expect(requests).toEqual(ONE_REQUEST);
      sent.push(sentLine(result));
    }
    const [fromNode, fromShell] = sent as [SendResult, SendResult];
    expect(Object.keys(fromShell)).toEqual(Object.keys(fromNode));
    expect(fromShell).toMatchObject({
      name,
      size: bytes.length,
      sha256: sha256(bytes),
      status: "verified",
      deduped: false,
      uploadedBytes: bytes.length,
      deliveries: [],
    });
    expect(sha256(await download(fromShell.url))).toBe(sha256(bytes));
  });

  it("sends a file of exactly the limit in one request, and again as a dedup hit", async () => {
    const at = await session();
    const bytes = randomBytes(SINGLE_UPLOAD_MAX_BYTES);
    await fileIn(at, "again.bin", bytes);
    const first = await run(shell(), ["send", "--json", "again.bin"], at);
    expect(first.requests).toEqual(ONE_REQUEST);
    const sent = sentLine(first.result);
    expect(sent).toMatchObject({ deduped: false, uploadedBytes: SINGLE_UPLOAD_MAX_BYTES });

    const again = await run(shell(), ["send", "--json", "again.bin"], at);
    expect(again.requests).toEqual(ONE_REQUEST);
    const hit = sentLine(again.result);
    expect(hit).toMatchObject({
      name: "again.bin",
      size: bytes.length,
      sha256: sha256(bytes),
      status: "verified",
      deduped: true,
      uploadedBytes: 0,
    });
    expect(hit.fileId).not.toBe(sent.fileId);
    expect(sha256(await download(hit.url))).toBe(sha256(bytes));

    const plain = await run(shell(), ["send", "again.bin"], at);
    expect(plain.requests).toEqual(ONE_REQUEST);
    expect(plain.result.code).toBe(0);
    expect(plain.result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+\n$/);
  });

  it("sends a file one byte over the limit by declare, PUT and complete", async () => {
    const at = await session();
    const bytes = randomBytes(SINGLE_UPLOAD_MAX_BYTES + 1);
    await fileIn(at, "big.bin", bytes);
    const { result, requests } = await run(shell(), ["send", "--json", "big.bin"], at);
    expect(requests).toEqual(DECLARED);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ size: bytes.length, deduped: false, uploadedBytes: bytes.length });
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });

  it("sends a file named - from its bytes, not from standard input", async () => {
    const at = await session();
    const bytes = randomBytes(16 * 1024);
    await fileIn(at, "-", bytes);
    const { result, requests } = await run(shell(), ["send", "--json", "-"], at, randomBytes(100));
    expect(requests).toEqual(ONE_REQUEST);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ name: "-", size: bytes.length, sha256: sha256(bytes) });
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });
});

describe("the POSIX shim's one request, retried and refused", () => {
  const dash = () => shells[0]!;

  it("asks again after a 503 and makes one file", async () => {
    const at = await session();
    const bytes = randomBytes(16 * 1024);
    await fileIn(at, "retried.bin", bytes);
    unavailable = 1;
    const { result, requests } = await run(dash(), ["send", "--json", "retried.bin"], at);
    expect(requests).toEqual(["POST /v1/single-uploads -> 503", ...ONE_REQUEST]);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ deduped: false, uploadedBytes: bytes.length });
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
    expect((await listed(at)) as { files: unknown[] }).toMatchObject({ files: [{ size: 16384 }] });
  });

  it("over the session's quota: one line, exit 1, nothing stored", async () => {
    const at = await session({ quotaBytes: 10_000 });
    await fileIn(at, "big.bin", randomBytes(16 * 1024));
    const { result, requests } = await run(dash(), ["send", "--json", "big.bin"], at);
    expect(requests).toEqual(ONE_REQUEST);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(failureLine(result)).toBe(
      "airlock: relay refused upload of big.bin: quota_exceeded: file is 16384 bytes; " +
        "the session quota is 10000 (HTTP 413)",
    );
    expect(await listed(at)).toEqual({ files: [] });
  });
});

describe("the POSIX shim and a relay without the one-request route", () => {
  beforeAll(() => {
    withoutRoute = true;
  });
  afterAll(() => {
    withoutRoute = false;
  });

  it("falls back to declare, PUT and complete", async () => {
    const at = await session();
    const bytes = randomBytes(16 * 1024);
    await fileIn(at, "old-relay.bin", bytes);
    const { result, requests } = await run(shells[0]!, ["send", "--json", "old-relay.bin"], at);
    expect(requests).toEqual(["POST /v1/single-uploads -> 404", ...DECLARED]);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ size: bytes.length, deduped: false, uploadedBytes: bytes.length });
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });
});
