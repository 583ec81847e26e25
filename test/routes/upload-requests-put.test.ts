import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { errorOf } from "../support/relay-client";
import { chunked, MiB, uploadLinkHarness } from "./upload-requests-harness";

/** Upload links taking a plain PUT (curl -T): the body stored, hashed and put in the inbox. */
for (const backend of backends()) {
  // Megabytes through the local stores on a busy machine: generous timeouts.
  describe(`upload links on ${backend.name}`, { timeout: 120_000 }, () => {
    const { client, createRequest, inbox, fileCount, contentSha, requestState } =
      uploadLinkHarness(backend);

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
  });
}
