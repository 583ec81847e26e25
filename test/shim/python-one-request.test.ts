// The Python shim sends a file of at most SINGLE_UPLOAD_MAX_BYTES in one request
// (`POST /v1/single-uploads`), as the Node shim does, against the real relay (`wrangler dev`)
// behind a recording proxy: the requests each run made are asserted exactly.
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
import { runDriver, shimDrivers, type ShimDriver } from "./shims";
import { logText, tempFilesIn } from "./shim-inputs";

const KiB = 1024;
const MiB = 1024 * KiB;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

const ONE_REQUEST = ["POST /v1/single-uploads"];
/** Probe, declare, PUT (through the relay, r2), complete. */
const THREE_REQUESTS = [
  "POST /v1/uploads",
  "POST /v1/uploads",
  "PUT /v1/blob-uploads/:id",
  "POST /v1/uploads/:id/complete",
];
const NOT_FOUND = {
  status: 404,
  body: JSON.stringify({ error: { code: "not_found", message: "no such route" } }),
};

const suite = relaySuite({}, "airlock-python-one-request-");
let node: ShimDriver;
let python: ShimDriver;
let proxy: FlakyProxy;
/** While set, the proxy answers `POST /v1/single-uploads` as a relay without the route does. */
let withoutRoute = false;
/** How many more `POST /v1/single-uploads` the proxy answers with a 503 of its own. */
let unavailable = 0;

beforeAll(async () => {
  const drivers = await shimDrivers(suite.dir);
  node = drivers.find((d) => d.name === "node")!;
  python = drivers.find((d) => d.name === "python")!;
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

/** Writes `bytes` as `name` in the session's work directory; its path. */
async function fileIn(at: Session, name: string, bytes: Buffer): Promise<string> {
  const path = join(at.cwd, name);
  await writeFile(path, bytes);
  return path;
}

/** The bytes a share link serves. */
async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/** `send <file> --json` by both shims, each in a session of its own; both results. */
async function sendFileBoth(name: string, bytes: Buffer) {
  const runs: { sent: SendResult; requests: string[] }[] = [];
  for (const driver of [node, python]) {
    const at = await session();
    const { result, requests } = await run(
      driver,
      ["send", await fileIn(at, name, bytes), "--json"],
      at,
    );
    runs.push({ sent: sentLine(result), requests });
  }
  const [fromNode, fromPython] = runs as [(typeof runs)[0], (typeof runs)[0]];
  expect(Object.keys(fromPython.sent)).toEqual(Object.keys(fromNode.sent));
  return { fromNode, fromPython };
}

describe("the Python shim's one-request send", () => {
  it("sends 16 KiB of random bytes in one request, byte-exact, as the Node shim does", async () => {
    const bytes = randomBytes(16 * KiB);
    const { fromNode, fromPython } = await sendFileBoth("random.bin", bytes);
    for (const { sent, requests } of [fromNode, fromPython]) {
      expect(requests).toEqual(ONE_REQUEST);
      expect(sent).toMatchObject({
        name: "random.bin",
        size: bytes.length,
        sha256: sha256(bytes),
        status: "verified",
        deduped: false,
        uploadedBytes: bytes.length,
        deliveries: [],
      });
    }
    expect(sha256(await download(fromPython.sent.url))).toBe(sha256(bytes));
  });

  it("gzips 500 KiB of text in the one request, byte-exact", async () => {
    const bytes = logText(500 * KiB);
    const { fromNode, fromPython } = await sendFileBoth("build.log", bytes);
    for (const { sent, requests } of [fromNode, fromPython]) {
      expect(requests).toEqual(ONE_REQUEST);
      expect(sent).toMatchObject({ size: bytes.length, sha256: sha256(bytes), deduped: false });
      expect(sent.uploadedBytes).toBeGreaterThan(0);
      expect(sent.uploadedBytes).toBeLessThan(bytes.length / 3);
    }
    expect(sha256(await download(fromPython.sent.url))).toBe(sha256(bytes));
  });

  it("sends the same file again as a dedup hit in one request, nothing uploaded", async () => {
    const at = await session();
    const bytes = randomBytes(SINGLE_UPLOAD_MAX_BYTES);
    const path = await fileIn(at, "again.bin", bytes);
    const first = await run(python, ["send", path, "--json"], at);
    expect(first.requests).toEqual(ONE_REQUEST);
    const sent = sentLine(first.result);
    expect(sent).toMatchObject({ deduped: false, uploadedBytes: SINGLE_UPLOAD_MAX_BYTES });

    const again = await run(python, ["send", path, "--json"], at);
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

    const plain = await run(python, ["send", path], at);
    expect(plain.requests).toEqual(ONE_REQUEST);
    expect(plain.result.code).toBe(0);
    expect(plain.result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+\n$/);
  });

  it("sends a file over the limit the three-request way", async () => {
    const at = await session();
    const bytes = randomBytes(2 * MiB);
    const { result, requests } = await run(
      python,
      ["send", await fileIn(at, "big.bin", bytes), "--json"],
      at,
    );
    expect(requests).toEqual(THREE_REQUESTS);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ size: bytes.length, deduped: false, uploadedBytes: bytes.length });
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });

  it("asks again after a 503, as for any request to the relay", async () => {
    const at = await session();
    const bytes = randomBytes(16 * KiB);
    unavailable = 1;
    const { result, requests } = await run(
      python,
      ["send", await fileIn(at, "retried.bin", bytes), "--json"],
      at,
    );
    expect(requests).toEqual(["POST /v1/single-uploads -> 503", ...ONE_REQUEST]);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ deduped: false, uploadedBytes: bytes.length });
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });

  it("sends a small standard input in one request, byte-exact", async () => {
    const at = await session();
    const bytes = logText(40 * KiB);
    const { result, requests } = await run(
      python,
      ["send", "-", "--name", "notes.txt", "--json"],
      at,
      bytes,
    );
    expect(requests).toEqual(ONE_REQUEST);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ name: "notes.txt", size: bytes.length, deduped: false });
    expect(sent.uploadedBytes).toBeLessThan(bytes.length);
    expect(await tempFilesIn(at.cwd)).toEqual([]);
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });
});

describe("the Python shim and a relay without the one-request route", () => {
  beforeAll(() => {
    withoutRoute = true;
  });
  afterAll(() => {
    withoutRoute = false;
  });

  it("falls back to declare, PUT and complete for a file", async () => {
    const at = await session();
    const bytes = randomBytes(16 * KiB);
    const { result, requests } = await run(
      python,
      ["send", await fileIn(at, "old-relay.bin", bytes), "--json"],
      at,
    );
    expect(requests).toEqual(["POST /v1/single-uploads -> 404", ...THREE_REQUESTS]);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ size: bytes.length, deduped: false, uploadedBytes: bytes.length });
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });

  it("falls back to declare, PUT and complete for standard input", async () => {
    const at = await session();
    const bytes = logText(40 * KiB);
    const { result, requests } = await run(
      python,
      ["send", "-", "--name", "notes.txt", "--json"],
      at,
      bytes,
    );
    // Standard input is hashed as it is read: no probe before the declaration.
    expect(requests).toEqual(["POST /v1/single-uploads -> 404", ...THREE_REQUESTS.slice(1)]);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ name: "notes.txt", size: bytes.length, deduped: false });
    expect(await tempFilesIn(at.cwd)).toEqual([]);
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });
});

describe("the Python shim's one-request refusals", () => {
  it.each([
    [
      "over the session's quota",
      { quotaBytes: 10_000 },
      "big.bin",
      "airlock: relay refused upload of big.bin: quota_exceeded: file is 16384 bytes; " +
        "the session quota is 10000",
    ],
    [
      "a name the relay refuses",
      {},
      "back\\slash.bin",
      "airlock: relay refused upload of back\\slash.bin: invalid_request: " +
        "name: must not contain / or \\",
    ],
  ])("%s: the Node shim's line, exit 1, nothing stored", async (_, mint, name, line) => {
    const bytes = randomBytes(16 * KiB);
    const lines: string[] = [];
    for (const driver of [node, python]) {
      const at = await session(mint);
      const { result, requests } = await run(
        driver,
        ["send", await fileIn(at, name, bytes), "--json"],
        at,
      );
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(requests).toEqual(ONE_REQUEST);
      lines.push(failureLine(result));
      const listed = await suite.api(at.token, "GET", "/v1/files");
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual({ files: [] });
    }
    expect(lines).toEqual([line, line]);
  });
});
