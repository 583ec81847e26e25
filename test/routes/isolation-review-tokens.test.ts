import { describe, expect, it } from "vitest";
import type { UploadAnswer } from "../../src/wire-types";
import { backends } from "../support/backends";
import { randomBytes } from "../support/bytes";
import { ADMIN_TOKEN } from "../support/relay-client";
import { declare, describe as describeBytes, putBytes, upload } from "../support/send";
import { answerOf, isolationHarness, UNKNOWN } from "./isolation-review-harness";

/** Isolation from tokens that no longer work: a revoked or expired session acts on nothing. */
for (const backend of backends()) {
  describe(`sandbox isolation on ${backend.name}`, { timeout: 120_000 }, () => {
    const { client, revoke, cast, fileRecord, linksOf, inboxOf, seed, createRequest, fileRoutes } =
      isolationHarness(backend);

    it("refuses a revoked or an expired token before it looks at any id, and changes nothing", async () => {
      const { victim, revoked, expired, expiry } = await cast();
      const bytes = randomBytes(3000);
      const file = await upload(client, victim.token, bytes, "victim.bin");
      const item = await seed(victim, "seed.csv", randomBytes(100));
      const request = await createRequest(victim.token);
      const pending = (await (
        await declare(
          client,
          victim.token,
          (await describeBytes(randomBytes(500), "p.bin")).declared,
        )
      ).json()) as UploadAnswer & { uploadId: string };
      await expiry();

      const routes: [string, (ids: typeof UNKNOWN) => string, object][] = [
        ...fileRoutes(revoked).map(
          ([method, path, options]) =>
            [method, (ids: typeof UNKNOWN) => path(ids.file), options] as [
              string,
              (ids: typeof UNKNOWN) => string,
              object,
            ],
        ),
        ["GET", () => "/v1/files", {}],
        ["GET", () => "/v1/inbox", {}],
        ["POST", (ids) => `/v1/inbox/${ids.item}/ack`, {}],
        ["GET", (ids) => `/v1/requests/${ids.request}`, {}],
        ["POST", () => "/v1/requests", { json: {} }],
        ["GET", (ids) => `/v1/uploads/${ids.upload}`, {}],
        ["POST", (ids) => `/v1/uploads/${ids.upload}/complete`, {}],
      ];
      const theirs = {
        file: file.fileId,
        upload: pending.uploadId,
        item: item.itemId,
        request: request.requestId,
      };
      for (const [attacker, code] of [
        [revoked, "session_revoked"],
        [expired, "invalid_token"],
      ] as const) {
        for (const [method, path, options] of routes) {
          const call = (ids: typeof UNKNOWN) =>
            client.call(method, path(ids), { token: attacker.token, ...options });
          const named = await answerOf(await call(theirs));
          const unknown = await answerOf(await call(UNKNOWN));
          expect([method, path(UNKNOWN), named]).toEqual([method, path(UNKNOWN), unknown]);
          expect(named.status).toBe(401);
          if (method !== "HEAD") expect(named.body).toMatchObject({ error: { code } });
        }
      }

      // The victim still has everything as it was.
      expect((await fileRecord(victim.token, file.fileId)).status).toBe(200);
      expect(await linksOf(file.fileId)).toBe(0);
      expect((await inboxOf(victim.token)).map((i) => i.itemId)).toEqual([item.itemId]);
      const state = await client.call("GET", `/v1/requests/${request.requestId}`, {
        token: victim.token,
      });
      expect(await state.json()).toMatchObject({ status: "open" });
      const resumed = await client.call("GET", `/v1/uploads/${pending.uploadId}`, {
        token: victim.token,
      });
      expect(await resumed.json()).toMatchObject({ status: "upload", uploadId: pending.uploadId });
    });

    // The signed PUT URL is not the token: the store (s3) or the relay (r2) still takes the
    // bytes after a revocation, until the URL expires. They never become a file of anyone's,
    // and the sweep removes them with the upload.
    it("lets no upload declared before a revocation become a file afterwards", async () => {
      const { victim, sibling } = await cast();
      const declared = await describeBytes(randomBytes(3000), "late.bin");
      const answer = (await (
        await declare(client, victim.token, declared.declared)
      ).json()) as Extract<UploadAnswer, { status: "upload" }>;
      await revoke(victim);
      await (await putBytes(client, answer.put, declared.stored)).body?.cancel();
      for (const [method, path] of [
        ["GET", `/v1/uploads/${answer.uploadId}`],
        ["POST", `/v1/uploads/${answer.uploadId}/complete`],
      ] as const) {
        expect(await answerOf(await client.call(method, path, { token: victim.token }))).toEqual({
          status: 401,
          body: { error: { code: "session_revoked", message: "session has been revoked" } },
        });
        expect(
          await answerOf(await client.call(method, path, { token: sibling.token })),
        ).toMatchObject({ status: 404, body: { error: { code: "upload_not_found" } } });
      }
      const operator = await client.call("GET", `/v1/files?sessionId=${victim.sessionId}`, {
        token: ADMIN_TOKEN,
      });
      expect(await operator.json()).toEqual({ files: [] });
      expect(
        await client.call("GET", "/v1/files", { token: sibling.token }).then((r) => r.json()),
      ).toEqual({
        files: [],
      });
    });
  });
}
