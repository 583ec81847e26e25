import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { hexToBase64 } from "../../src/encoding";
import { partSizeFor } from "../../src/part-plan";
import { findUploadRequest } from "../../src/db/upload-requests";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { ADMIN_TOKEN, errorOf, ORIGIN, RelayClient } from "../support/relay-client";
import { partBytes, partDigests } from "../support/send";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";

const MiB = 1024 * 1024;
/** Two parts: one full 8 MiB part and a short last one. */
const TWO_PARTS = 8 * MiB + 4096;

interface LinkState {
  status: "uploading" | "verifying" | "received";
  uploadId: string;
  partSize?: number;
  partCount?: number;
  missing?: number[];
  name?: string;
  size?: number;
  sha256?: string;
}

interface InboxItem {
  itemId: string;
  source: string;
  name: string;
  size: number;
  sha256: string;
  file: { fileId: string; status: string };
}

for (const backend of backends()) {
  // Megabytes through the local stores on a busy machine: generous timeouts.
  describe(`upload links on ${backend.name}`, { timeout: 120_000 }, () => {
    const client = new RelayClient(backend.env);
    const config = readConfig(backend.env);

    async function createRequest(token: string, body: unknown = {}): Promise<CreatedRequest> {
      const response = await client.call("POST", "/v1/requests", { token, json: body });
      expect(response.status, await response.clone().text()).toBe(201);
      return response.json();
    }

    /** The link's path on the relay: `/u/<token>`. */
    const linkPath = (created: CreatedRequest) => new URL(created.url).pathname;

    async function start(path: string, bytes: Uint8Array, fields: Record<string, unknown> = {}) {
      return client.call("POST", `${path}/uploads`, {
        json: {
          name: "report.bin",
          size: bytes.byteLength,
          sha256: await sha256Hex(bytes),
          partSha256: await partDigests(bytes, bytes.byteLength),
          ...fields,
        },
      });
    }

    async function putPart(path: string, state: LinkState, bytes: Uint8Array, partNumber: number) {
      const part = partBytes(bytes, partSizeFor(bytes.byteLength), partNumber);
      return client.call("PUT", `${path}/uploads/${state.uploadId}/parts/${partNumber}`, {
        body: part,
        headers: {
          "content-length": String(part.byteLength),
          "x-amz-checksum-sha256": hexToBase64(await sha256Hex(part)),
        },
      });
    }

    /** The page's whole flow for honest bytes: start, every part, complete. */
    async function sendThroughPage(path: string, bytes: Uint8Array, name = "report.bin") {
      const started = await start(path, bytes, { name });
      expect(started.status, await started.clone().text()).toBe(201);
      const state = (await started.json()) as LinkState;
      for (const partNumber of state.missing ?? []) {
        const put = await putPart(path, state, bytes, partNumber);
        expect(put.status, await put.clone().text()).toBe(204);
      }
      const done = await client.call("POST", `${path}/uploads/${state.uploadId}/complete`);
      expect(done.status, await done.clone().text()).toBe(200);
      return (await done.json()) as LinkState;
    }

    async function inbox(token: string): Promise<InboxItem[]> {
      const response = await client.call("GET", "/v1/inbox", { token });
      return ((await response.json()) as { items: InboxItem[] }).items;
    }

    async function fileCount(token: string): Promise<number> {
      const response = await client.call("GET", "/v1/files", { token });
      return ((await response.json()) as { files: unknown[] }).files.length;
    }

    async function contentSha(token: string, fileId: string): Promise<string> {
      const response = await client.call("GET", `/v1/files/${fileId}/content`, { token });
      expect(response.status).toBe(200);
      return sha256Hex(await response.arrayBuffer());
    }

    async function requestState(token: string, requestId: string) {
      const response = await client.call("GET", `/v1/requests/${requestId}`, { token });
      expect(response.status).toBe(200);
      return (await response.json()) as { status: string; fileId?: string };
    }

    describe("POST /v1/requests", () => {
      it("mints a single-use link with the relay's defaults", async () => {
        const { token } = await client.mintSession({ ttlSeconds: 30 * 86_400 });
        const before = Date.now();
        const created = await createRequest(token);
        expect(created.url).toMatch(new RegExp(`^${ORIGIN}/u/[A-Za-z0-9_-]{43}$`));
        expect(created.requestId).toMatch(/^req_[A-Za-z0-9_-]{22}$/);
        expect(created.name).toBeNull();
        expect(created.maxBytes).toBe(config.maxFileBytes);
        const expires = Date.parse(created.expiresAt);
        expect(expires).toBeGreaterThanOrEqual(before + config.linkTtlSeconds * 1000);
        expect(expires).toBeLessThanOrEqual(Date.now() + config.linkTtlSeconds * 1000);
        expect(await requestState(token, created.requestId)).toEqual({
          requestId: created.requestId,
          status: "open",
          name: null,
          maxBytes: config.maxFileBytes,
          expiresAt: created.expiresAt,
        });
      });

      it("never lets a link outlive its session", async () => {
        const session = (await client.mintSession({ ttlSeconds: 60 })) as {
          token: string;
          expiresAt?: string;
        };
        const created = await createRequest(session.token, { ttlSeconds: 86_400, name: "a.csv" });
        expect(Date.parse(created.expiresAt)).toBe(Date.parse(session.expiresAt!));
        expect(created.name).toBe("a.csv");
      });

      it.each([
        [
          { maxBytes: 5368709121 },
          "maxBytes: must be at most 5368709120 (MAX_FILE_BYTES, the largest file this relay takes)",
        ],
        [{ maxBytes: 0 }, "maxBytes: must be at least 1"],
        [{ maxBytes: 1.5 }, "maxBytes: must be a whole number"],
        [{ ttlSeconds: 0 }, "ttlSeconds: must be positive"],
        [{ name: "../x.pdf" }, "name: must not contain / or \\"],
        [{ name: "" }, "name: must not be empty"],
        [
          { name: "a\u202egpj.exe" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
        [
          { name: "a\u200bb.pdf" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
        [
          { name: "\ufeffa.pdf" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
        [
          { name: "a\u2060b.pdf" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
        [
          { name: "a\u{e0041}.pdf" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
      ])("refuses %j with 400 invalid_request", async (body, message) => {
        const { token } = await client.mintSession();
        const response = await client.call("POST", "/v1/requests", { token, json: body });
        expect(await errorOf(response)).toEqual({ status: 400, code: "invalid_request", message });
      });

      it("refuses unknown fields, the operator and a missing token", async () => {
        const { token } = await client.mintSession();
        const unknown = await client.call("POST", "/v1/requests", { token, json: { to: "x" } });
        expect(await errorOf(unknown)).toMatchObject({ status: 400, code: "invalid_request" });
        const operator = await client.call("POST", "/v1/requests", {
          token: ADMIN_TOKEN,
          json: {},
        });
        expect(await errorOf(operator)).toEqual({
          status: 403,
          code: "forbidden",
          message: "this route is for sandboxes",
        });
        const anonymous = await client.call("POST", "/v1/requests", { json: {} });
        expect(await errorOf(anonymous)).toMatchObject({ status: 401, code: "unauthorized" });
      });
    });

    describe("GET /u/:token", () => {
      it("shows what is asked for, escaped, under a CSP that allows one script by hash", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token, { name: "<script>q3.csv", maxBytes: 2_000_000 });
        const response = await client.fetch(created.url);
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
        const csp = response.headers.get("content-security-policy") ?? "";
        expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/]{43}='/);
        expect(csp).toContain("connect-src 'self'");
        expect(csp).toContain("default-src 'none'");
        expect(csp).not.toContain("unsafe-inline");
        const page = await response.text();
        expect(page).toContain("&lt;script&gt;q3.csv");
        expect(page).not.toContain("<script>q3");
        expect(page).toContain('type="file"');
        expect(page).toContain("1.9 MiB");
        expect(page).not.toMatch(/\son[a-z]+=/i);
        // The hashes in the CSP are those of the inline script and styles, byte for byte.
        const inline = async (tag: string) => {
          const found = [...page.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, "g"))];
          return Promise.all(found.map(async ([, text]) => sha256Base64(text!)));
        };
        const [script] = await inline("script");
        expect(csp).toContain(`script-src 'sha256-${script}'`);
        expect(csp).toContain(
          `style-src ${(await inline("style")).map((h) => `'sha256-${h}'`).join(" ")}`,
        );
      });

      it("answers 404 with a page for a token the relay never made", async () => {
        const response = await client.fetch(`${ORIGIN}/u/${"A".repeat(43)}`);
        expect(response.status).toBe(404);
        expect(await response.text()).toContain("This link is not valid");
        const short = await client.fetch(`${ORIGIN}/u/abc`);
        expect(short.status).toBe(404);
      });
    });

    describe("PUT /u/:token (curl -T)", () => {
      it("stores the body, hashes it and puts it in the inbox; the link is then used", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token, { name: "notes.txt" });
        const bytes = randomBytes(100_000);
        const response = await client.fetch(created.url, { method: "PUT", body: bytes });
        expect(response.status).toBe(201);
        expect(await response.json()).toEqual({
          name: "notes.txt",
          size: 100_000,
          sha256: await sha256Hex(bytes),
        });
        const [item, ...rest] = await inbox(token);
        expect(rest).toEqual([]);
        expect(item).toMatchObject({
          name: "notes.txt",
          size: 100_000,
          sha256: await sha256Hex(bytes),
          source: `upload-link:${created.requestId}`,
        });
        expect(await contentSha(token, item!.file.fileId)).toBe(await sha256Hex(bytes));
        expect(await requestState(token, created.requestId)).toMatchObject({
          status: "received",
          fileId: item!.file.fileId,
        });

        const again = await client.fetch(created.url, { method: "PUT", body: bytes });
        expect(await errorOf(again)).toEqual({
          status: 410,
          code: "link_exhausted",
          message: "this upload link has already been used",
        });
        const page = await client.fetch(created.url);
        expect(page.status).toBe(410);
        expect(await page.text()).toContain("This link has been used");
        expect(await fileCount(token)).toBe(1);
      });

      it("cleans the name given with ?name=", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token);
        const name = encodeURIComponent("../../etc/pass\u202ewd\n.txt");
        const response = await client.fetch(`${created.url}?name=${name}`, {
          method: "PUT",
          body: "hello",
        });
        expect(response.status).toBe(201);
        expect(((await response.json()) as { name: string }).name).toBe("passwd.txt");
      });

      it("refuses a Content-Length over maxBytes with 413 before storing anything", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token, { maxBytes: 1000 });
        const response = await client.fetch(created.url, {
          method: "PUT",
          headers: { "content-length": "1001" },
          body: randomBytes(1001),
        });
        expect(await errorOf(response)).toEqual({
          status: 413,
          code: "payload_too_large",
          message: "the file is 1001 bytes; this upload link takes at most 1000 bytes",
        });
        expect(await fileCount(token)).toBe(0);
        expect(await inbox(token)).toEqual([]);
        expect((await requestState(token, created.requestId)).status).toBe("open");
      });

      it("refuses a body over the session's quota, keeping nothing", async () => {
        const { token } = await client.mintSession({ quotaBytes: 1000 });
        const created = await createRequest(token);
        const response = await client.fetch(created.url, {
          method: "PUT",
          body: randomBytes(2000),
        });
        expect(await errorOf(response)).toMatchObject({ status: 413, code: "quota_exceeded" });
        expect(await fileCount(token)).toBe(0);
        expect((await requestState(token, created.requestId)).status).toBe("open");
      });

      it("takes a chunked body of several parts and cuts off one that runs past maxBytes", async () => {
        const { token } = await client.mintSession();
        const bytes = randomBytes(9 * MiB);
        const small = await createRequest(token, { maxBytes: 9 * MiB - 1 });
        const cut = await client.fetch(small.url, { method: "PUT", body: chunked(bytes) });
        expect(await errorOf(cut)).toEqual({
          status: 413,
          code: "payload_too_large",
          message: `the body ran past ${9 * MiB - 1} bytes, the most this upload link takes; nothing was kept`,
        });
        expect(await fileCount(token)).toBe(0);
        if (backend.name === "r2") {
          const staged = await env.BUCKET.list({ prefix: "staging/" });
          expect(staged.objects).toEqual([]);
        }

        const roomy = await createRequest(token, { maxBytes: 10 * MiB });
        const stored = await client.fetch(roomy.url, { method: "PUT", body: chunked(bytes) });
        expect(stored.status, await stored.clone().text()).toBe(201);
        const [item] = await inbox(token);
        expect(item?.size).toBe(9 * MiB);
        expect(await contentSha(token, item!.file.fileId)).toBe(await sha256Hex(bytes));
      });
    });

    describe("the page's multipart API", () => {
      it("takes parts in any order, verifies the whole file, then fills the inbox", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token);
        const path = linkPath(created);
        const bytes = randomBytes(TWO_PARTS);
        client.holdVerification();
        try {
          const started = (await (await start(path, bytes)).json()) as LinkState;
          expect(started).toMatchObject({ status: "uploading", partCount: 2, missing: [1, 2] });
          expect((await putPart(path, started, bytes, 2)).status).toBe(204);
          const state = (await (
            await client.call("GET", `${path}/uploads/${started.uploadId}`)
          ).json()) as LinkState;
          expect(state.missing).toEqual([1]);
          expect((await putPart(path, started, bytes, 1)).status).toBe(204);
          const done = await client.call("POST", `${path}/uploads/${started.uploadId}/complete`);
          expect(await done.json()).toEqual({
            status: "verifying",
            uploadId: started.uploadId,
            name: "report.bin",
            size: TWO_PARTS,
          });
          // Not verified yet: nobody sees it.
          expect(await inbox(token)).toEqual([]);
          expect((await requestState(token, created.requestId)).status).toBe("open");
          await client.runQueued();
        } finally {
          client.resumeVerification();
        }
        const state = await requestState(token, created.requestId);
        expect(state.status).toBe("received");
        const [item] = await inbox(token);
        expect(item).toMatchObject({ name: "report.bin", sha256: await sha256Hex(bytes) });
        expect(item!.file.status).toBe("verified");
        expect(await contentSha(token, state.fileId!)).toBe(await sha256Hex(bytes));
      });

      it("puts a large file in the inbox once the queue verifies it, with nobody polling", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token);
        const bytes = randomBytes(TWO_PARTS);
        client.holdVerification();
        try {
          const done = await sendThroughPage(linkPath(created), bytes);
          expect(done.status).toBe("verifying");
          expect(await inbox(token)).toEqual([]);
          await client.runQueued();
        } finally {
          client.resumeVerification();
        }
        // Neither the page nor the agent has asked since: the queue alone settled it.
        const settled = await findUploadRequest(env.DB, created.requestId);
        expect(settled?.receivedAt).toEqual(expect.any(Number));
        const [item, ...rest] = await inbox(token);
        expect(rest).toEqual([]);
        expect(item).toMatchObject({
          source: `upload-link:${created.requestId}`,
          name: "report.bin",
          size: TWO_PARTS,
          sha256: await sha256Hex(bytes),
          file: { fileId: settled!.fileId, status: "verified" },
        });
        expect(await contentSha(token, item!.file.fileId)).toBe(await sha256Hex(bytes));
      });

      it("opens the link again once the queue finds a large file is not what was declared", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token);
        const path = linkPath(created);
        const bytes = randomBytes(TWO_PARTS);
        client.holdVerification();
        try {
          // Honest parts, a false whole-file SHA-256: only the read-back on the queue sees it.
          const started = (await (
            await start(path, bytes, { sha256: "b".repeat(64) })
          ).json()) as LinkState;
          for (const partNumber of [1, 2]) {
            expect((await putPart(path, started, bytes, partNumber)).status).toBe(204);
          }
          const done = await client.call("POST", `${path}/uploads/${started.uploadId}/complete`);
          expect(((await done.json()) as LinkState).status).toBe("verifying");
          expect((await findUploadRequest(env.DB, created.requestId))?.fileId).toMatch(/^fil_/);
          await client.runQueued();
        } finally {
          client.resumeVerification();
        }
        // Released by the queue itself, before anyone looked.
        expect(await findUploadRequest(env.DB, created.requestId)).toMatchObject({
          fileId: null,
          uploadId: null,
          receivedAt: null,
        });
        expect(await inbox(token)).toEqual([]);
        expect(await fileCount(token)).toBe(0);
        expect((await client.fetch(created.url)).status).toBe(200);
        // Sent again honestly, it is verified on the queue and lands in the inbox.
        expect((await sendThroughPage(path, bytes)).status).toBe("verifying");
        const [item, ...rest] = await inbox(token);
        expect(rest).toEqual([]);
        expect(await contentSha(token, item!.file.fileId)).toBe(await sha256Hex(bytes));
      });

      it("fills the inbox at once for a small file verified in the request", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token);
        const bytes = randomBytes(5000);
        const done = await sendThroughPage(linkPath(created), bytes, "photo.png");
        expect(done).toMatchObject({ status: "received", sha256: await sha256Hex(bytes) });
        const [item] = await inbox(token);
        expect(item?.name).toBe("photo.png");
      });

      it("refuses a part whose bytes differ from their digest and keeps it missing", async () => {
        const { token } = await client.mintSession();
        const path = linkPath(await createRequest(token));
        const bytes = randomBytes(TWO_PARTS);
        const state = (await (await start(path, bytes)).json()) as LinkState;
        const other = randomBytes(8 * MiB);
        const lying = await client.call("PUT", `${path}/uploads/${state.uploadId}/parts/1`, {
          body: other,
          headers: {
            "content-length": String(other.byteLength),
            "x-amz-checksum-sha256": hexToBase64(
              await sha256Hex(partBytes(bytes, partSizeFor(TWO_PARTS), 1)),
            ),
          },
        });
        expect(await errorOf(lying)).toMatchObject({ status: 400, code: "checksum_mismatch" });
        const short = await client.call("PUT", `${path}/uploads/${state.uploadId}/parts/2`, {
          body: randomBytes(10),
          headers: {
            "content-length": "10",
            "x-amz-checksum-sha256": hexToBase64(await sha256Hex(randomBytes(10))),
          },
        });
        expect(await errorOf(short)).toEqual({
          status: 400,
          code: "length_mismatch",
          message: "Content-Length must be 4096",
        });
        const after = (await (
          await client.call("GET", `${path}/uploads/${state.uploadId}`)
        ).json()) as LinkState;
        expect(after.missing).toEqual([1, 2]);
      });

      it("refuses a start over maxBytes, over the quota or with the wrong part count", async () => {
        const { token } = await client.mintSession({ quotaBytes: 6000 });
        const path = linkPath(await createRequest(token, { maxBytes: 8000 }));
        const over = await start(path, randomBytes(8001));
        expect(await errorOf(over)).toEqual({
          status: 413,
          code: "payload_too_large",
          message: "the file is 8001 bytes; this upload link takes at most 8000 bytes",
        });
        const quota = await start(path, randomBytes(7000));
        expect(await errorOf(quota)).toEqual({
          status: 413,
          code: "quota_exceeded",
          message:
            "the session that asked for this file has 6000 bytes of its quota left; nothing was kept",
        });
        const parts = await start(path, randomBytes(100), {
          partSha256: ["0".repeat(64), "1".repeat(64)],
        });
        expect(await errorOf(parts)).toEqual({
          status: 400,
          code: "invalid_request",
          message: `partSha256 must list 1 digests: one per ${8 * MiB}-byte part of the 100 bytes`,
        });
        expect(await fileCount(token)).toBe(0);
      });

      it("cleans the picked file's name", async () => {
        const { token } = await client.mintSession();
        const path = linkPath(await createRequest(token));
        const done = await sendThroughPage(
          path,
          randomBytes(10),
          "C:\\Users\\me\\\u202eevil\u0007.txt",
        );
        expect(done.name).toBe("evil.txt");
        expect((await inbox(token))[0]?.name).toBe("evil.txt");
      });

      it("deletes a file whose bytes are not the declared SHA-256 and opens the link again", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token);
        const path = linkPath(created);
        const bytes = randomBytes(3000);
        const started = (await (
          await start(path, bytes, { sha256: "a".repeat(64) })
        ).json()) as LinkState;
        expect((await putPart(path, started, bytes, 1)).status).toBe(204);
        const done = await client.call("POST", `${path}/uploads/${started.uploadId}/complete`);
        expect(await errorOf(done)).toMatchObject({ status: 422, code: "content_mismatch" });
        expect(await inbox(token)).toEqual([]);
        expect(await fileCount(token)).toBe(0);
        expect((await requestState(token, created.requestId)).status).toBe("open");
        const honest = await sendThroughPage(path, bytes);
        expect(honest.status).toBe("received");
      });

      it("lets a new start take the link over from an unfinished upload", async () => {
        const { token } = await client.mintSession();
        const path = linkPath(await createRequest(token));
        const first = (await (await start(path, randomBytes(TWO_PARTS))).json()) as LinkState;
        const bytes = randomBytes(2000);
        const done = await sendThroughPage(path, bytes);
        expect(done.status).toBe("received");
        const stale = await client.call("GET", `${path}/uploads/${first.uploadId}`);
        expect(await errorOf(stale)).toEqual({
          status: 410,
          code: "link_exhausted",
          message: "this upload link has already been used",
        });
        expect(await fileCount(token)).toBe(1);
      });
    });
  });
}

async function sha256Base64(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return btoa(String.fromCharCode(...new Uint8Array(digest)));
}

/** `bytes` as a stream of 1 MiB chunks with no length: a chunked request body. */
function chunked(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + MiB));
      offset += MiB;
    },
  });
}
