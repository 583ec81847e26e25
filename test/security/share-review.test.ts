import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { type IfRangeStore, startIfRangeStore } from "./if-range-store";

/**
 * Share links and file routes attacked by a link holder and by a sibling session, against
 * `wrangler dev` on the s3 backend. The store sits behind a proxy that answers `If-Range` as
 * AWS S3 does: a validator that does not match the object's ETag makes the store ignore the
 * Range and send the whole object. The header is not signed, so any holder of a store URL may
 * add it.
 */
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

function tarHeader(name: string, size: number, link?: string): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0, "utf8");
  header.write("0000644\0", 100);
  header.write(`${size.toString(8).padStart(11, "0")}\0`, 124);
  header.write("00000000000\0", 136);
  header.write("        ", 148);
  header.write(link ? "2" : "0", 156);
  if (link) header.write(link, 157, "utf8");
  header.write("ustar\u000000", 257);
  const sum = header.reduce((total, byte) => total + byte, 0);
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  return header;
}

describe("share links and file routes on s3, attacked (wrangler dev)", () => {
  let s3: StrictS3;
  let store: IfRangeStore;
  let relay: RunningRelay;
  let dir: string;
  let token: string;

  beforeAll(async () => {
    prepareShim();
    s3 = await startStrictS3();
    store = await startIfRangeStore(s3);
    relay = await startRelay({ storage: "s3", vars: s3Vars(s3, store.url) });
    token = (await relay.mintSession({ owner: "review-owner" })).token;
    dir = await mkdtemp(join(tmpdir(), "airlock-share-review-"));
  }, 180_000);
  afterAll(async () => {
    await relay?.stop();
    await store?.stop();
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function send(bytes: Uint8Array, name: string) {
    const path = join(dir, `${Math.random().toString(36).slice(2)}-${name}`);
    await writeFile(path, bytes);
    const result = await runShim(["send", path, "--wait", "--json"], {
      env: relayEnv(relay.url, token),
    });
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as { fileId: string; url: string; status: string };
  }

  function call(method: string, path: string, bearer: string, json?: object) {
    return fetch(`${relay.url}${path}`, {
      method,
      redirect: "manual",
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(json ? { "content-type": "application/json" } : {}),
      },
      body: json ? JSON.stringify(json) : undefined,
    });
  }

  async function limitedLink(fileId: string, maxDownloads: number): Promise<string> {
    const response = await call("POST", `/v1/files/${fileId}/links`, token, { maxDownloads });
    expect(response.status).toBe(201);
    return ((await response.json()) as { url: string }).url;
  }

  /** Follows a 307 by hand, as an attacker would, adding `storeHeaders` at the store. */
  async function download(url: string, headers: Record<string, string>, storeHeaders = {}) {
    const relayed = await fetch(url, { headers, redirect: "manual" });
    const location = relayed.headers.get("location");
    const final = location
      ? await fetch(location, { headers: { ...headers, ...storeHeaders } })
      : relayed;
    const body = Buffer.from(await final.arrayBuffer());
    const ok = final.status === 200 || final.status === 206;
    return { relayStatus: relayed.status, status: final.status, body, fileBytes: ok ? body : null };
  }

  it("never sends more than maxDownloads × size when a Range's store URL is fetched with an If-Range", async () => {
    const bytes = randomBytes(100_000);
    const { fileId } = await send(bytes, "metered.bin");
    const url = await limitedLink(fileId, 1);
    let received = 0;
    let wholeCopies = 0;
    const statuses: number[] = [];
    // Not from byte 0: s3rver, behind the strict proxy, reads `bytes=0-0` as `bytes=0-`.
    for (let i = 0; i < 5; i++) {
      const got = await download(url, { range: "bytes=10-10" }, { "if-range": '"not-the-etag"' });
      statuses.push(got.status);
      if (!got.fileBytes) continue;
      received += got.fileBytes.byteLength;
      if (sha256(got.fileBytes) === sha256(bytes)) wholeCopies++;
      else expect(got.fileBytes.equals(bytes.subarray(10, 11))).toBe(true);
    }
    expect({ received, wholeCopies, statuses }).toEqual({
      received: 5,
      wholeCopies: 0,
      statuses: [206, 206, 206, 206, 206],
    });
    // What is left of the budget comes as a range, then nothing more.
    const rest = await download(url, { range: "bytes=5-" }, { "if-range": '"not-the-etag"' });
    expect(rest.status).toBe(206);
    expect(rest.fileBytes!.equals(bytes.subarray(5))).toBe(true);
    const after = await download(url, { range: "bytes=10-10" });
    expect(after.relayStatus).toBe(410);
    // A whole download on a capped link still goes through the store.
    const whole = await download(await limitedLink(fileId, 1), {}, { "if-range": '"x"' });
    expect(whole.relayStatus).toBe(307);
    expect(sha256(whole.fileBytes!)).toBe(sha256(bytes));
  });

  it("hides a sibling session's file (same owner) from GET, content, links and DELETE", async () => {
    const bytes = randomBytes(20_000);
    const { fileId } = await send(bytes, "mine.bin");
    const sibling = (await relay.mintSession({ owner: "review-owner" })).token;
    for (const [method, path, json] of [
      ["GET", `/v1/files/${fileId}`],
      ["GET", `/v1/files/${fileId}/content`],
      ["HEAD", `/v1/files/${fileId}/content`],
      ["POST", `/v1/files/${fileId}/links`, { maxDownloads: 5 }],
      ["DELETE", `/v1/files/${fileId}`],
    ] as const) {
      const response = await call(method, path, sibling, json);
      expect([method, path, response.status]).toEqual([method, path, 404]);
      expect(response.headers.get("location")).toBeNull();
      if (method !== "HEAD")
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
          "file_not_found",
        );
    }
    const own = await call("GET", `/v1/files/${fileId}/content`, token);
    expect(own.status).toBe(307);
    const stored = await fetch(own.headers.get("location")!);
    expect(sha256(Buffer.from(await stored.arrayBuffer()))).toBe(sha256(bytes));
  });

  it("answers every form of request through a deleted file's links 410 file_deleted, with no store URL", async () => {
    const bytes = randomBytes(30_000);
    const { fileId, url } = await send(bytes, "gone.bin");
    const capped = await limitedLink(fileId, 3);
    expect((await call("DELETE", `/v1/files/${fileId}`, token)).status).toBe(200);
    for (const link of [url, capped])
      for (const [target, init] of [
        [link, {}],
        [link, { method: "HEAD" }],
        [link, { headers: { range: "bytes=0-99" } }],
        [`${link}?download=1`, {}],
        [`${link}?inline=1`, {}],
      ] as [string, RequestInit][]) {
        const response = await fetch(target, { ...init, redirect: "manual" });
        expect(response.status).toBe(410);
        expect(response.headers.get("location")).toBeNull();
        if (init.method !== "HEAD")
          expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
            "file_deleted",
          );
      }
  });

  it("serves a file whose declared type is no valid header value, from an upload link's page", async () => {
    const bytes = randomBytes(5000);
    const asked = await call("POST", "/v1/requests", token, { name: "odd.txt" });
    expect(asked.status).toBe(201);
    const link = ((await asked.json()) as { url: string }).url;
    const digest = sha256(bytes);
    // The page's start body takes any MIME type whose quoted parameter holds no quote or newline.
    const start = await fetch(`${link}/uploads`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        name: "odd.txt",
        size: bytes.byteLength,
        contentType: 'text/plain; x="\u202e"',
        sha256: digest,
        partSha256: [digest],
      }),
    });
    expect(start.status).toBe(201);
    const { uploadId } = (await start.json()) as { uploadId: string };
    const part = await fetch(`${link}/uploads/${uploadId}/parts/1`, {
      method: "PUT",
      headers: { "x-amz-checksum-sha256": Buffer.from(digest, "hex").toString("base64") },
      body: bytes,
    });
    expect(part.status).toBe(204);
    const done = await fetch(`${link}/uploads/${uploadId}/complete`, { method: "POST" });
    expect(done.status).toBe(200);
    let fileId: string | undefined;
    const deadline = Date.now() + 60_000;
    for (let i = 0; !fileId && Date.now() < deadline; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 250));
      const inbox = (await (await call("GET", "/v1/inbox", token)).json()) as {
        items: { name: string; file: { fileId: string } }[];
      };
      fileId = inbox.items.find((item) => item.name === "odd.txt")?.file.fileId;
    }
    expect(fileId).toBeDefined();
    const record = (await (await call("GET", `/v1/files/${fileId}`, token)).json()) as {
      url: string;
    };
    for (const response of [
      await call("GET", `/v1/files/${fileId}/content`, token),
      await fetch(record.url, { redirect: "manual" }),
      await fetch(record.url, { headers: { range: "bytes=1-" } }),
    ]) {
      const location = response.headers.get("location");
      const final = location ? await fetch(location) : response;
      expect(final.status).toBeLessThan(300);
      const got = Buffer.from(await final.arrayBuffer());
      expect(sha256(got)).toBe(sha256(final.status === 206 ? bytes.subarray(1) : bytes));
      expect(final.headers.get("content-type")).toBe("application/octet-stream");
    }
  }, 120_000);

  it("shows archive entry names on the share page with bidi overrides and controls made visible", async () => {
    const spoof = "invoice\u202Efdp.exe";
    const archive = Buffer.concat([
      tarHeader(spoof, 4),
      Buffer.from("MZ!!".padEnd(512, "\0")),
      tarHeader("notes\u2066.txt", 0, "target\u202Egnp.sh"),
      Buffer.alloc(1024),
    ]);
    const { url } = await send(archive, "bundle.tar");
    let html = "";
    for (let i = 0; i < 60 && !html.includes("Archive with"); i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 500));
      html = await (await fetch(url, { headers: { accept: BROWSER } })).text();
    }
    expect(html).toContain("Archive with 2 entries.");
    expect(html).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
    expect(html).toContain("<td>invoice\\u202efdp.exe</td>");
    expect(html).toContain("<td>notes\\u2066.txt</td>");
    expect(html).toContain("<td>symlink → target\\u202egnp.sh</td>");
  });
});
