import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { hexToBase64 } from "../../src/encoding";
import { partSizeFor } from "../../src/part-plan";
import { findUploadRequest } from "../../src/db/upload-requests";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { errorOf } from "../support/relay-client";
import { partBytes } from "../support/send";
import { MiB, TWO_PARTS, uploadLinkHarness, type LinkState } from "./upload-requests-harness";

/** Upload links through the page's multipart API: parts, verification, and the link opened again. */
for (const backend of backends()) {
  // Megabytes through the local stores on a busy machine: generous timeouts.
  describe(`upload links on ${backend.name}`, { timeout: 120_000 }, () => {
    const {
      client,
      createRequest,
      linkPath,
      start,
      putPart,
      sendThroughPage,
      inbox,
      fileCount,
      contentSha,
      requestState,
    } = uploadLinkHarness(backend);

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
