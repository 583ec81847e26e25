// The Python shim sends a file of at most SINGLE_UPLOAD_MAX_BYTES in one request
// (`POST /v1/single-uploads`), as the Node shim does, against the real relay (`wrangler dev`)
// behind a recording proxy: the requests each run made are asserted exactly.
import { createHash, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { failureLine } from "./run-shim";
import { sentLine } from "./sent-line";
import { shimDrivers, type ShimDriver } from "./shims";
import { logText, tempFilesIn } from "./shim-inputs";
import {
  ONE_REQUEST,
  download,
  expectUploaded,
  singleUploadProxySuite,
  type ProxiedSession,
} from "./single-upload-proxy";

const KiB = 1024;
const MiB = 1024 * KiB;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Probe, declare, PUT (through the relay, r2), complete. */
const THREE_REQUESTS = [
  "POST /v1/uploads",
  "POST /v1/uploads",
  "PUT /v1/blob-uploads/:id",
  "POST /v1/uploads/:id/complete",
];

const { suite, faults, session, run, expectResentInOneRequest, asAnOlderRelay, expectFallsBack } =
  singleUploadProxySuite("airlock-python-one-request-");
let node: ShimDriver;
let python: ShimDriver;

beforeAll(async () => {
  const drivers = await shimDrivers(suite.dir);
  node = drivers.find((d) => d.name === "node")!;
  python = drivers.find((d) => d.name === "python")!;
});

/** Writes `bytes` as `name` in the session's work directory; its path. */
async function fileIn(at: ProxiedSession, name: string, bytes: Buffer): Promise<string> {
  const path = join(at.cwd, name);
  await writeFile(path, bytes);
  return path;
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

  it("sends the same file again as a dedup hit in one request, nothing uploaded", () =>
    expectResentInOneRequest(python, (json) =>
      json ? ["send", "again.bin", "--json"] : ["send", "again.bin"],
    ));

  it("sends a file over the limit the three-request way", async () => {
    const at = await session();
    const bytes = randomBytes(2 * MiB);
    const ran = await run(python, ["send", await fileIn(at, "big.bin", bytes), "--json"], at);
    await expectUploaded(ran, THREE_REQUESTS, bytes);
  });

  it("asks again after a 503, as for any request to the relay", async () => {
    const at = await session();
    const bytes = randomBytes(16 * KiB);
    faults.unavailable = 1;
    const ran = await run(python, ["send", await fileIn(at, "retried.bin", bytes), "--json"], at);
    await expectUploaded(ran, ["POST /v1/single-uploads -> 503", ...ONE_REQUEST], bytes);
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
  asAnOlderRelay();

  it("falls back to declare, PUT and complete for a file", () =>
    expectFallsBack(python, ["send", "old-relay.bin", "--json"], THREE_REQUESTS));

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
