// The POSIX shim sends a file of at most SINGLE_UPLOAD_MAX_BYTES in one request
// (`POST /v1/single-uploads`), as the Node and Python shims do, under dash and under busybox sh
// with only busybox's applets and curl, against the real relay (`wrangler dev`) behind a
// recording proxy: the requests each run made are asserted exactly.
import { createHash, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { SINGLE_UPLOAD_MAX_BYTES } from "../../src/services/uploads/single-upload-limit";
import { failureLine } from "./run-shim";
import { sentLine } from "./sent-line";
import { POSIX_SHIM, busyboxOnlyPath, required, shimDrivers, type ShimDriver } from "./shims";
import {
  ONE_REQUEST,
  download,
  expectUploaded,
  singleUploadProxySuite,
  type ProxiedSession,
} from "./single-upload-proxy";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Declare, PUT (through the relay, r2), complete: the POSIX shim makes no probe first. */
const DECLARED = ["POST /v1/uploads", "PUT /v1/blob-uploads/:id", "POST /v1/uploads/:id/complete"];

const { suite, faults, session, run, expectResentInOneRequest, asAnOlderRelay, expectFallsBack } =
  singleUploadProxySuite("airlock-posix-one-request-");
let node: ShimDriver;
/** dash, then busybox sh with only busybox's applets and curl on its PATH. */
const shells: ShimDriver[] = [];

beforeAll(async () => {
  const drivers = await shimDrivers(suite.dir);
  node = drivers.find((d) => d.name === "node")!;
  const dash = drivers.find((d) => d.name === "posix")!;
  const busybox = required("busybox");
  const bin = await busyboxOnlyPath(suite.dir, busybox, required("curl"));
  shells.push(dash, { ...dash, argv: [busybox, "sh", POSIX_SHIM], path: bin });
});

/** Writes `bytes` as `name` in the session's work directory. */
async function fileIn(at: ProxiedSession, name: string, bytes: Buffer): Promise<void> {
  await writeFile(join(at.cwd, name), bytes);
}

/** The session's files, as `GET /v1/files` lists them. */
async function listed(at: ProxiedSession): Promise<unknown> {
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

  it("sends a file of exactly the limit in one request, and again as a dedup hit", () =>
    expectResentInOneRequest(shell(), (json) =>
      json ? ["send", "--json", "again.bin"] : ["send", "again.bin"],
    ));

  it("sends a file one byte over the limit by declare, PUT and complete", async () => {
    const at = await session();
    const bytes = randomBytes(SINGLE_UPLOAD_MAX_BYTES + 1);
    await fileIn(at, "big.bin", bytes);
    await expectUploaded(await run(shell(), ["send", "--json", "big.bin"], at), DECLARED, bytes);
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
    faults.unavailable = 1;
    const ran = await run(dash(), ["send", "--json", "retried.bin"], at);
    await expectUploaded(ran, ["POST /v1/single-uploads -> 503", ...ONE_REQUEST], bytes);
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
  asAnOlderRelay();

  it("falls back to declare, PUT and complete", () =>
    expectFallsBack(shells[0]!, ["send", "--json", "old-relay.bin"], DECLARED));
});
