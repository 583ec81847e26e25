// The one-request suites of the Python and POSIX shims: the real relay (`wrangler dev`) behind a
// recording proxy that can answer `POST /v1/single-uploads` as an older relay does (404) or with
// a 503 of its own, and runs of a shim through it with the requests each run made.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { SINGLE_UPLOAD_MAX_BYTES } from "../../src/services/uploads/single-upload-limit";
import { relaySuite, type RelaySuite } from "../support/relay-suite";
import { startFlakyProxy, type FlakyProxy } from "./flaky-proxy";
import { relayEnv, type ShimResult } from "./run-shim";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { sentLine } from "./sent-line";
import { runDriver, type ShimDriver } from "./shims";

export const ONE_REQUEST = ["POST /v1/single-uploads"];

const NOT_FOUND = {
  status: 404,
  body: JSON.stringify({ error: { code: "not_found", message: "no such route" } }),
};

/** A session of its own (its own dedup scope) reached through the proxy, and a work directory. */
export interface ProxiedSession {
  token: string;
  cwd: string;
  env: Record<string, string>;
}

export interface SingleUploadProxySuite {
  suite: RelaySuite;
  /** What the proxy does to `POST /v1/single-uploads`: set by a test, read per request. */
  faults: {
    /** While set, it answers as a relay without the route does. */
    withoutRoute: boolean;
    /** How many more it answers with a 503 of its own. */
    unavailable: number;
  };
  session(mint?: object): Promise<ProxiedSession>;
  /** Runs a shim through the proxy (with `input` on its standard input when given). */
  run(
    driver: ShimDriver,
    args: string[],
    at: ProxiedSession,
    input?: Buffer,
  ): Promise<{ result: ShimResult; requests: string[] }>;
  /**
   * A file of exactly the one-request limit sent by `driver` in one request, sent again as a
   * dedup hit in one request (nothing uploaded, a file of its own serving the same bytes), and
   * once more without `--json` (the share URL alone). `send(json)` is the command line for
   * `again.bin` in the session's work directory.
   */
  expectResentInOneRequest(driver: ShimDriver, send: (json: boolean) => string[]): Promise<void>;
  /** Within the calling `describe`, the proxy answers as a relay without the route does. */
  asAnOlderRelay(): void;
  /**
   * 16 KiB sent by `driver` (`args` name `old-relay.bin` in the session's work directory) to a
   * relay without the route: the one request answered 404, then `declared` (the shim's own
   * way), byte-exact.
   */
  expectFallsBack(driver: ShimDriver, args: string[], declared: string[]): Promise<void>;
}

/** Registers the relay's and the proxy's `beforeAll` / `afterAll`. */
export function singleUploadProxySuite(dirPrefix: string): SingleUploadProxySuite {
  const suite = relaySuite({}, dirPrefix);
  const faults = { withoutRoute: false, unavailable: 0 };
  let proxy: FlakyProxy;

  beforeAll(async () => {
    proxy = await startFlakyProxy(suite.relay.url, (method, path) => {
      if (method !== "POST" || path !== "/v1/single-uploads") return undefined;
      if (faults.withoutRoute) return NOT_FOUND;
      if (faults.unavailable === 0) return undefined;
      faults.unavailable--;
      return { status: 503, body: "" };
    });
  });

  afterAll(async () => {
    await proxy?.stop();
  });

  const session = async (mint: object = {}): Promise<ProxiedSession> => {
    const { token } = await suite.relay.mintSession(mint);
    const cwd = await mkdtemp(join(suite.dir, "work-"));
    return { token, cwd, env: relayEnv(proxy.url, token) };
  };

  const run: SingleUploadProxySuite["run"] = async (driver, args, at, input) => {
    const first = proxy.log.length;
    const result = await runDriver(driver, args, { env: at.env, cwd: at.cwd, home: at.cwd, input });
    return { result, requests: proxy.log.slice(first).map(route) };
  };

  const expectResentInOneRequest: SingleUploadProxySuite["expectResentInOneRequest"] = async (
    driver,
    send,
  ) => {
    const at = await session();
    const bytes = randomBytes(SINGLE_UPLOAD_MAX_BYTES);
    await writeFile(join(at.cwd, "again.bin"), bytes);
    const first = await run(driver, send(true), at);
    expect(first.requests).toEqual(ONE_REQUEST);
    const sent = sentLine(first.result);
    expect(sent).toMatchObject({ deduped: false, uploadedBytes: SINGLE_UPLOAD_MAX_BYTES });

    const again = await run(driver, send(true), at);
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

    const plain = await run(driver, send(false), at);
    expect(plain.requests).toEqual(ONE_REQUEST);
    expect(plain.result.code).toBe(0);
    expect(plain.result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+\n$/);
  };

  const asAnOlderRelay = () => {
    beforeAll(() => {
      faults.withoutRoute = true;
    });
    afterAll(() => {
      faults.withoutRoute = false;
    });
  };

  const expectFallsBack: SingleUploadProxySuite["expectFallsBack"] = async (
    driver,
    args,
    declared,
  ) => {
    const at = await session();
    const bytes = randomBytes(16 * 1024);
    await writeFile(join(at.cwd, "old-relay.bin"), bytes);
    await expectUploaded(
      await run(driver, args, at),
      ["POST /v1/single-uploads -> 404", ...declared],
      bytes,
    );
  };

  return {
    suite,
    faults,
    session,
    run,
    expectResentInOneRequest,
    asAnOlderRelay,
    expectFallsBack,
  };
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** The route of a logged request, its ids replaced by `:id`, with the proxy's answer if faked. */
function route({ request, fault }: FlakyProxy["log"][number]): string {
  const shape = request
    .replace(/^(PUT \/v1\/blob-uploads\/).+$/, "$1:id")
    .replace(/^(POST \/v1\/uploads\/)[^/]+(\/complete)$/, "$1:id$2");
  return fault === undefined ? shape : `${shape} -> ${fault}`;
}

/** The bytes a share link serves. */
export async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/**
 * A run that made exactly `requests` and uploaded `bytes` whole (no dedup hit), served back
 * byte-exact by its share link; its `--json` line.
 */
export async function expectUploaded(
  ran: { result: ShimResult; requests: string[] },
  requests: string[],
  bytes: Buffer,
): Promise<SendResult> {
  expect(ran.requests).toEqual(requests);
  const sent = sentLine(ran.result);
  expect(sent).toMatchObject({ size: bytes.length, deduped: false, uploadedBytes: bytes.length });
  expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  return sent;
}
