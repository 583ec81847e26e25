import { describe, expect, it } from "vitest";
import { hexToBase64 } from "../../src/encoding";
import type { DeliveryRecord, UploadAnswer } from "../../src/wire-types";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { complete, declare, describe as describeBytes, putBytes, upload } from "../support/send";
import { answerOf, isolationHarness, UNKNOWN, type Session } from "./isolation-review-harness";

/** Isolation of inbox items, upload links, uploads and delivery Idempotency-Keys between sessions. */
for (const backend of backends()) {
  describe(`sandbox isolation on ${backend.name}`, { timeout: 120_000 }, () => {
    const { client, cast, telegramPostsTo, inboxOf, seed, createRequest } =
      isolationHarness(backend);

    it("neither acks nor reads another session's inbox item, and answers as for an unknown item", async () => {
      const { victim, sibling, stranger } = await cast();
      const bytes = randomBytes(2048);
      const item = await seed(victim, "input.csv", bytes);
      for (const attacker of [sibling, stranger]) {
        const ack = (id: string) =>
          client.call("POST", `/v1/inbox/${id}/ack`, { token: attacker.token });
        const theirs = await answerOf(await ack(item.itemId));
        expect(theirs).toEqual(await answerOf(await ack(UNKNOWN.item)));
        expect(theirs).toEqual({
          status: 404,
          body: { error: { code: "inbox_item_not_found", message: "no such inbox item" } },
        });
        // The item's file is the victim's file: not the attacker's to read.
        const content = await client.call("GET", `/v1/files/${item.file.fileId}/content`, {
          token: attacker.token,
        });
        expect(await answerOf(content)).toEqual({
          status: 404,
          body: { error: { code: "file_not_found", message: "no such file" } },
        });
      }
      const [still] = await inboxOf(victim.token);
      expect(still?.itemId).toBe(item.itemId);
      const own = await client.call("GET", `/v1/files/${item.file.fileId}/content`, {
        token: victim.token,
      });
      expect(new Uint8Array(await own.arrayBuffer())).toEqual(bytes);
    });

    it("keeps an upload-link request and its browser upload to the session that asked", async () => {
      const { victim, sibling, stranger } = await cast();
      const asked = await createRequest(victim.token, { name: "wanted.bin" });
      const bytes = randomBytes(3000);
      const sha256 = await sha256Hex(bytes);
      const started = await client.call("POST", `${new URL(asked.url).pathname}/uploads`, {
        json: { name: "wanted.bin", size: bytes.length, sha256, partSha256: [sha256] },
      });
      expect(started.status).toBe(201);
      const { uploadId } = (await started.json()) as { uploadId: string };

      for (const attacker of [sibling, stranger]) {
        const peek = (id: string) =>
          client.call("GET", `/v1/requests/${id}`, { token: attacker.token });
        const theirs = await answerOf(await peek(asked.requestId));
        expect(theirs).toEqual(await answerOf(await peek(UNKNOWN.request)));
        expect(theirs).toEqual({
          status: 404,
          body: { error: { code: "not_found", message: "no such upload request" } },
        });

        // The victim's link upload, driven through a link of the attacker's own.
        const own = new URL((await createRequest(attacker.token)).url).pathname;
        const drive = (id: string) => [
          client.call("GET", `${own}/uploads/${id}`),
          client.call("PUT", `${own}/uploads/${id}/parts/1`, {
            body: bytes,
            headers: {
              "content-length": String(bytes.length),
              "x-amz-checksum-sha256": hexToBase64(sha256),
            },
          }),
          client.call("POST", `${own}/uploads/${id}/complete`),
        ];
        for (const [index, attempt] of drive(uploadId).entries()) {
          const answer = await answerOf(await attempt);
          expect(answer).toEqual(await answerOf(await drive(UNKNOWN.upload)[index]!));
          expect(answer).toEqual({
            status: 404,
            body: {
              error: {
                code: "upload_not_found",
                message: "this upload no longer holds the link; start again",
              },
            },
          });
        }
        // Its own API routes do not take the link's upload either.
        for (const [method, path] of [
          ["GET", `/v1/uploads/${uploadId}`],
          ["POST", `/v1/uploads/${uploadId}/complete`],
        ] as const) {
          expect(
            await answerOf(await client.call(method, path, { token: attacker.token })),
          ).toEqual({
            status: 404,
            body: { error: { code: "upload_not_found", message: "no such upload" } },
          });
        }
        expect(await inboxOf(attacker.token)).toEqual([]);
      }

      // The person finishes the upload: it lands in the victim's inbox only.
      const path = new URL(asked.url).pathname;
      const part = await client.call("PUT", `${path}/uploads/${uploadId}/parts/1`, {
        body: bytes,
        headers: {
          "content-length": String(bytes.length),
          "x-amz-checksum-sha256": hexToBase64(sha256),
        },
      });
      expect(part.status).toBe(204);
      const done = await client.call("POST", `${path}/uploads/${uploadId}/complete`);
      expect(await done.json()).toMatchObject({ status: "received", sha256 });
      expect((await inboxOf(victim.token)).map((i) => i.sha256)).toEqual([sha256]);
      for (const attacker of [sibling, stranger]) expect(await inboxOf(attacker.token)).toEqual([]);
    });

    it("neither resumes, completes nor writes into another session's upload", async () => {
      const { victim, sibling, stranger } = await cast();
      const single = await describeBytes(randomBytes(3000), "single.bin");
      const multi = randomBytes(4000);
      const singleAnswer = (await (
        await declare(client, victim.token, single.declared)
      ).json()) as Extract<UploadAnswer, { status: "upload" }>;
      const multiAnswer = (await (
        await declare(client, victim.token, {
          ...(await describeBytes(multi, "multi.bin")).declared,
          partSha256: [await sha256Hex(multi)],
        })
      ).json()) as Extract<UploadAnswer, { status: "multipart" }>;
      expect([singleAnswer.status, multiAnswer.status]).toEqual(["upload", "multipart"]);

      for (const attacker of [sibling, stranger]) {
        for (const [method, path] of [
          ["GET", (id: string) => `/v1/uploads/${id}`],
          ["POST", (id: string) => `/v1/uploads/${id}/complete`],
        ] as const) {
          const call = async (id: string) =>
            answerOf(await client.call(method, path(id), { token: attacker.token }));
          const unknown = await call(UNKNOWN.upload);
          expect(unknown).toEqual({
            status: 404,
            body: { error: { code: "upload_not_found", message: "no such upload" } },
          });
          expect(await call(singleAnswer.uploadId)).toEqual(unknown);
          expect(await call(multiAnswer.uploadId)).toEqual(unknown);
        }
        // The attacker's own signed PUT, pointed at the victim's upload: the signature covers it.
        const own = (await (
          await declare(client, attacker.token, single.declared)
        ).json()) as Extract<UploadAnswer, { status: "upload" }>;
        expect(own.status).toBe("upload");
        const repointed = {
          ...own.put,
          url: own.put.url.replaceAll(own.uploadId, singleAnswer.uploadId),
        };
        expect(repointed.url).not.toBe(own.put.url);
        const put = await putBytes(client, repointed, single.stored);
        await put.body?.cancel();
        expect(put.status).toBe(403);
        expect(
          await client.call("GET", "/v1/files", { token: attacker.token }).then((r) => r.json()),
        ).toEqual({
          files: [],
        });
      }

      // Nothing was stored for the victim meanwhile; its own PUT and complete work as if alone.
      expect(
        await answerOf(await complete(client, victim.token, singleAnswer.uploadId)),
      ).toMatchObject({
        status: 409,
        body: { error: { code: "upload_not_uploaded" } },
      });
      expect((await putBytes(client, singleAnswer.put, single.stored)).status).toBe(200);
      const done = await complete(client, victim.token, singleAnswer.uploadId);
      expect(done.status).toBe(201);
      expect(await done.json()).toMatchObject({
        sha256: single.declared.sha256,
        status: "verified",
        sessionId: victim.sessionId,
      });
    });

    it("scopes a delivery's Idempotency-Key to its session: another session's key names nothing", async () => {
      const { victim, sibling, stranger } = await cast();
      const key = `dlv-key-${crypto.randomUUID()}`;
      const deliver = (session: Session, fileId: string) =>
        client.call("POST", `/v1/files/${fileId}/deliveries`, {
          token: session.token,
          json: { to: session.chat },
          headers: { "idempotency-key": key },
        });
      const file = await upload(client, victim.token, randomBytes(700), "victim.bin");
      const first = await deliver(victim, file.fileId);
      expect(first.status).toBe(201);
      const delivered = (await first.json()) as DeliveryRecord;

      for (const attacker of [sibling, stranger]) {
        // The victim's file under the victim's key, to the attacker's own chat: not found.
        expect(await answerOf(await deliver(attacker, file.fileId))).toEqual({
          status: 404,
          body: { error: { code: "file_not_found", message: "no such file" } },
        });
        // Its own file under the same key: a delivery of its own, never the victim's record
        // and never a 409 naming the victim's file or chat.
        const mine = await upload(client, attacker.token, randomBytes(800), "mine.bin");
        const response = await deliver(attacker, mine.fileId);
        expect(response.status).toBe(201);
        const record = (await response.json()) as DeliveryRecord;
        expect(record).toMatchObject({
          fileId: mine.fileId,
          to: attacker.chat,
          status: "delivered",
        });
        expect(record.deliveryId).not.toBe(delivered.deliveryId);
        expect(JSON.stringify(record)).not.toContain(file.fileId);
        expect(await telegramPostsTo(attacker.chat)).toBe(1);
      }
      expect(await telegramPostsTo(victim.chat)).toBe(1);
      const again = (await (await deliver(victim, file.fileId)).json()) as DeliveryRecord;
      expect(again).toEqual(delivered);
    });
  });
}
