import { describe, expect, it } from "vitest";
import { uploadKey } from "../../src/storage";
import type { FileRecord } from "../../src/wire-types";
import { backends } from "../support/backends";
import { logText, randomBytes, sha256Hex } from "../support/bytes";
import { countingDb } from "../support/counting-db";
import { errorOf, RelayClient } from "../support/relay-client";
import { describe as describeBytes } from "../support/send";
import { sendOne, singleUploadHarness } from "./single-uploads-harness";

/** `POST /v1/single-uploads` taking honest bytes: verified in the request, dedup hits, D1 round trips. */
for (const backend of backends()) {
  describe(`POST /v1/single-uploads on ${backend.name}`, { timeout: 60_000 }, () => {
    const { client, store, uploadsOf, sendHonest, siblingOfHolder } = singleUploadHarness(backend);

    it.each([
      ["random binary as it is", randomBytes(300_000), "identity"],
      ["log text gzipped", logText(8000), "gzip"],
      ["an empty file", new Uint8Array(0), "identity"],
    ] as const)(
      "registers %s as a verified file in one request, byte-exact",
      async (_, bytes, encoding) => {
        client.holdVerification();
        try {
          const { file, session } = await sendHonest(bytes, encoding);
          expect(file).toMatchObject({
            size: bytes.byteLength,
            sha256: await sha256Hex(bytes),
            status: "verified",
            deduped: false,
          });
          const [upload] = await uploadsOf(session.sessionId);
          expect(upload?.status).toBe("completed");
          expect(client.queued).toEqual([{ uploadId: upload!.id, fileId: file.fileId }]);
          await client.runQueued();
          const content = await client.call("GET", `/v1/files/${file.fileId}/content`, {
            token: session.token,
          });
          expect(await sha256Hex(await content.arrayBuffer())).toBe(file.sha256);
          const shared = await client.fetch(file.url);
          expect(await sha256Hex(await shared.arrayBuffer())).toBe(file.sha256);
        } finally {
          client.resumeVerification();
        }
      },
    );

    it("is a dedup hit within the owner scope: a file, and the body left unread", async () => {
      const bytes = randomBytes(200_000);
      const { held: first, session: second } = await siblingOfHolder(bytes);
      const { declared } = await describeBytes(bytes, "again.bin");
      // The body is not the content at all: a hit never reads it.
      const response = await sendOne(client, second.token, declared, randomBytes(200_000));
      expect(response.status).toBe(201);
      const file = (await response.json()) as FileRecord;
      expect(file).toMatchObject({
        name: "again.bin",
        deduped: true,
        status: "verified",
        sha256: first.file.sha256,
      });
      expect(await uploadsOf(second.sessionId)).toEqual([]);
      const content = await client.call("GET", `/v1/files/${file.fileId}/content`, {
        token: second.token,
      });
      expect(await sha256Hex(await content.arrayBuffer())).toBe(first.file.sha256);
    });

    it("never short-cuts on another scope's content: the bytes travel, are checked, and stored once", async () => {
      const bytes = randomBytes(200_000);
      const first = await sendHonest(bytes, "identity");
      const stranger = await client.mintSession({ owner: `stranger-${crypto.randomUUID()}` });
      const { declared } = await describeBytes(bytes, "mine.bin");
      // Claiming the other scope's hash with other bytes gets the same refusal as for any lie.
      const lie = await sendOne(client, stranger.token, declared, randomBytes(200_000));
      expect(await errorOf(lie)).toMatchObject({ status: 422, code: "content_mismatch" });
      const honest = await sendHonest(bytes, "identity", stranger);
      expect(honest.file.deduped).toBe(false);
      expect(Object.keys(honest.file).sort()).toEqual(Object.keys(first.file).sort());
      // Settled on the queue: the store keeps the first copy and drops this upload's own.
      const uploads = await uploadsOf(stranger.sessionId);
      const completed = uploads.find((u) => u.status === "completed")!;
      expect(completed.stored_key).toBe(uploadKey(first.file.sha256, completed.id));
      expect(await store.head(completed.stored_key)).toBeNull();
      const content = await client.fetch(honest.file.url);
      expect(await sha256Hex(await content.arrayBuffer())).toBe(first.file.sha256);
    });

    it("stores a new file in two D1 round trips and answers a dedup hit in one", async () => {
      const counting = countingDb(backend.env.DB);
      const counted = new RelayClient({ ...backend.env, DB: counting.db });
      counted.holdVerification();
      const session = await counted.mintSession({ owner: `trips-${crypto.randomUUID()}` });
      const bytes = randomBytes(20_000);
      const { declared, stored } = await describeBytes(bytes, "trips.bin");
      // The declaration (which reads the session's row) and the registration.
      let before = counting.trips();
      const sent = await sendOne(counted, session.token, declared, stored);
      expect(sent.status, await sent.clone().text()).toBe(201);
      expect(counting.trips() - before).toBe(2);
      before = counting.trips();
      const again = await sendOne(counted, session.token, declared, stored);
      expect(((await again.json()) as FileRecord).deduped).toBe(true);
      expect(counting.trips() - before).toBe(1);
      // An Idempotency-Key rides in the same batches.
      const keyed = await describeBytes(randomBytes(20_000), "keyed.bin");
      before = counting.trips();
      const first = await sendOne(counted, session.token, keyed.declared, keyed.stored, {
        "idempotency-key": crypto.randomUUID(),
      });
      expect(first.status, await first.clone().text()).toBe(201);
      expect(counting.trips() - before).toBe(2);
      before = counting.trips();
      const hit = await sendOne(counted, session.token, keyed.declared, keyed.stored, {
        "idempotency-key": crypto.randomUUID(),
      });
      expect(((await hit.json()) as FileRecord).deduped).toBe(true);
      expect(counting.trips() - before).toBe(1);
    });

    it("is verified at once: a dedup target before its verify job has run", async () => {
      client.holdVerification();
      try {
        const { file, session, stored } = await sendHonest(randomBytes(30_000), "identity");
        expect(file.status).toBe("verified");
        expect(client.queued.map((job) => job.fileId)).toEqual([file.fileId]);
        const { declared } = await describeBytes(stored, "again.bin");
        const again = await sendOne(client, session.token, declared, randomBytes(30_000));
        expect(again.status).toBe(201);
        expect(await again.json()).toMatchObject({ deduped: true, sha256: file.sha256 });
        await client.runQueued();
      } finally {
        client.resumeVerification();
      }
    });
  });
}
