import { describe, expect, it } from "vitest";
import type { FileRecord } from "../../src/wire-types";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { errorOf } from "../support/relay-client";
import { describe as describeBytes, type Declared } from "../support/send";
import { sendOne, singleUploadHarness } from "./single-uploads-harness";

/** `POST /v1/single-uploads` with an Idempotency-Key: one file per key, and a reused key refused. */
for (const backend of backends()) {
  describe(`POST /v1/single-uploads on ${backend.name}`, { timeout: 60_000 }, () => {
    const { client, store, uploadsOf, filesOf, usageOf, siblingOfHolder } =
      singleUploadHarness(backend);

    describe("with an Idempotency-Key", () => {
      /** Sends with `key`; the file answered (201 expected). */
      async function sendKeyed(
        token: string,
        declared: Declared,
        body: Uint8Array,
        key: string,
      ): Promise<FileRecord> {
        const response = await sendOne(client, token, declared, body, { "idempotency-key": key });
        expect(response.status, await response.clone().text()).toBe(201);
        return (await response.json()) as FileRecord;
      }

      /** Every upload of the session but the completed one was rejected, its object gone. */
      async function expectOnlyRejectedBeside(sessionId: string) {
        for (const upload of await uploadsOf(sessionId)) {
          if (upload.status !== "completed") {
            expect(upload.status).toBe("rejected");
            expect(await store.head(upload.stored_key)).toBeNull();
          }
        }
      }

      /** A record without its share link, which is minted fresh for every answer. */
      const withoutLink = ({ url: _url, urlExpiresAt: _at, ...rest }: FileRecord) => rest;

      const reusedMessage = (fileId: string) =>
        `the file this Idempotency-Key made (${fileId}) was deleted or has expired; ` +
        "send it again with a new key";

      it("answers a new upload sent again with the same key with its first file, counted once", async () => {
        const session = await client.mintSession();
        const bytes = randomBytes(40_000);
        const { declared, stored } = await describeBytes(bytes, "once.bin");
        const key = "k".repeat(200);
        const first = await sendKeyed(session.token, declared, stored, key);
        const again = await sendKeyed(session.token, declared, stored, key);
        expect(first.deduped).toBe(false);
        expect(withoutLink(again)).toEqual(withoutLink(first));
        expect((await filesOf(session.token)).map((f) => f.fileId)).toEqual([first.fileId]);
        expect(await usageOf(session.sessionId)).toBe(bytes.byteLength);
        expect((await uploadsOf(session.sessionId)).map((u) => u.status)).toEqual(["completed"]);
        const content = await client.fetch(again.url);
        expect(await sha256Hex(await content.arrayBuffer())).toBe(await sha256Hex(bytes));
      });

      it("answers a dedup hit sent again with the same key with its first file, counted once", async () => {
        const bytes = randomBytes(30_000);
        const { session } = await siblingOfHolder(bytes);
        const { declared, stored } = await describeBytes(bytes, "hit.bin");
        const key = crypto.randomUUID();
        const first = await sendKeyed(session.token, declared, stored, key);
        const again = await sendKeyed(session.token, declared, stored, key);
        expect(first.deduped).toBe(true);
        expect(withoutLink(again)).toEqual(withoutLink(first));
        expect((await filesOf(session.token)).map((f) => f.fileId)).toEqual([first.fileId]);
        expect(await usageOf(session.sessionId)).toBe(bytes.byteLength);
        expect(await uploadsOf(session.sessionId)).toEqual([]);
      });

      it("answers the first file even when it filled the quota", async () => {
        const session = await client.mintSession({ quotaBytes: 5000 });
        const { declared, stored } = await describeBytes(randomBytes(5000), "full.bin");
        const key = crypto.randomUUID();
        const first = await sendKeyed(session.token, declared, stored, key);
        const again = await sendKeyed(session.token, declared, stored, key);
        expect(withoutLink(again)).toEqual(withoutLink(first));
        expect((await filesOf(session.token)).map((f) => f.fileId)).toEqual([first.fileId]);
        expect(await usageOf(session.sessionId)).toBe(5000);
      });

      it("answers two attempts at once with one file", async () => {
        const session = await client.mintSession();
        const bytes = randomBytes(60_000);
        const { declared, stored } = await describeBytes(bytes, "race.bin");
        const key = crypto.randomUUID();
        const [one, two] = await Promise.all([
          sendKeyed(session.token, declared, stored, key),
          sendKeyed(session.token, declared, stored, key),
        ]);
        expect(two.fileId).toBe(one.fileId);
        expect((await filesOf(session.token)).map((f) => f.fileId)).toEqual([one.fileId]);
        expect(await usageOf(session.sessionId)).toBe(bytes.byteLength);
        await expectOnlyRejectedBeside(session.sessionId);
      });

      it("makes a file per key: two keys, two files", async () => {
        const session = await client.mintSession();
        const bytes = randomBytes(10_000);
        const { declared, stored } = await describeBytes(bytes, "twice.bin");
        const first = await sendKeyed(session.token, declared, stored, crypto.randomUUID());
        const second = await sendKeyed(session.token, declared, stored, crypto.randomUUID());
        expect(second.fileId).not.toBe(first.fileId);
        expect(second.deduped).toBe(true);
        const listed = (await filesOf(session.token)).map((f) => f.fileId).sort();
        expect(listed).toEqual([first.fileId, second.fileId].sort());
        expect(await usageOf(session.sessionId)).toBe(2 * bytes.byteLength);
      });

      it("never answers another session's file for its key: each session gets its own", async () => {
        const owner = `single-key-owner-${crypto.randomUUID()}`;
        const victim = await client.mintSession({ owner });
        const bytes = randomBytes(20_000);
        const { declared, stored } = await describeBytes(bytes, "secret.bin");
        const key = crypto.randomUUID();
        const original = await sendKeyed(victim.token, declared, stored, key);
        // The same key from a session of the same owner (a dedup hit) and from a stranger
        // (new bytes of its own, under the victim's name and hash or not).
        const mate = await client.mintSession({ owner });
        const stranger = await client.mintSession({ owner: `stranger-${crypto.randomUUID()}` });
        const other = await describeBytes(randomBytes(20_000), "mine.bin");
        const fromMate = await sendKeyed(mate.token, declared, stored, key);
        const fromStranger = await sendKeyed(stranger.token, other.declared, other.stored, key);
        for (const [file, session] of [
          [fromMate, mate],
          [fromStranger, stranger],
        ] as const) {
          expect(file.fileId).not.toBe(original.fileId);
          expect(file.sessionId).toBe(session.sessionId);
          expect((await filesOf(session.token)).map((f) => f.fileId)).toEqual([file.fileId]);
        }
        expect(fromStranger).toMatchObject({ name: "mine.bin", sha256: other.declared.sha256 });
        expect((await filesOf(victim.token)).map((f) => f.fileId)).toEqual([original.fileId]);
      });

      it.each([
        ["other content", "first.bin", randomBytes(9000), "first.bin"],
        ["the same content under another name", "first.bin", null, "second.bin"],
      ])(
        "refuses a key that made another file (%s) with 409 idempotency_key_reused, storing nothing",
        async (_what, firstName, otherBytes, otherName) => {
          const session = await client.mintSession();
          const bytes = randomBytes(9000);
          const original = await describeBytes(bytes, firstName);
          const key = crypto.randomUUID();
          const first = await sendKeyed(session.token, original.declared, original.stored, key);
          const other = await describeBytes(otherBytes ?? bytes, otherName);
          const again = await sendOne(client, session.token, other.declared, other.stored, {
            "idempotency-key": key,
          });
          expect(await errorOf(again)).toEqual({
            status: 409,
            code: "idempotency_key_reused",
            message:
              `this Idempotency-Key made another file (${first.fileId}, ${firstName}); ` +
              "send this one with a new key",
          });
          expect((await filesOf(session.token)).map((f) => f.fileId)).toEqual([first.fileId]);
          expect(await usageOf(session.sessionId)).toBe(bytes.byteLength);
          await expectOnlyRejectedBeside(session.sessionId);
        },
      );

      it("answers a key whose file was deleted with 409 idempotency_key_reused, storing nothing", async () => {
        const session = await client.mintSession();
        const { declared, stored } = await describeBytes(randomBytes(8000), "gone.bin");
        const key = crypto.randomUUID();
        const first = await sendKeyed(session.token, declared, stored, key);
        const deleted = await client.call("DELETE", `/v1/files/${first.fileId}`, {
          token: session.token,
        });
        expect(deleted.status).toBe(200);
        // Nothing in the scope holds the content now: the bytes are read and stored again,
        // then undone with the registration.
        const again = await sendOne(client, session.token, declared, stored, {
          "idempotency-key": key,
        });
        expect(await errorOf(again)).toEqual({
          status: 409,
          code: "idempotency_key_reused",
          message: reusedMessage(first.fileId),
        });
        expect(await filesOf(session.token)).toEqual([]);
        expect(await usageOf(session.sessionId)).toBe(0);
        const uploads = await uploadsOf(session.sessionId);
        expect(uploads.map((u) => u.status).sort()).toEqual(["completed", "rejected"]);
        const rejected = uploads.find((u) => u.status === "rejected")!;
        expect(await store.head(rejected.stored_key)).toBeNull();
      });

      it("answers a deleted dedup hit's key with 409 idempotency_key_reused, adding no file", async () => {
        const { held, session } = await siblingOfHolder(randomBytes(8000));
        const { declared } = await describeBytes(held.stored, "hit.bin");
        const key = crypto.randomUUID();
        const first = await sendKeyed(session.token, declared, held.stored, key);
        expect(first.deduped).toBe(true);
        await client.call("DELETE", `/v1/files/${first.fileId}`, { token: session.token });
        const again = await sendOne(client, session.token, declared, held.stored, {
          "idempotency-key": key,
        });
        expect(await errorOf(again)).toEqual({
          status: 409,
          code: "idempotency_key_reused",
          message: reusedMessage(first.fileId),
        });
        expect(await filesOf(session.token)).toEqual([]);
        expect(await usageOf(session.sessionId)).toBe(0);
        expect(await uploadsOf(session.sessionId)).toEqual([]);
      });

      it.each([
        ["empty", ""],
        ["over 200 characters", "k".repeat(201)],
      ])("refuses a key %s with the deliveries' 400, storing nothing", async (_, key) => {
        const session = await client.mintSession();
        const { declared, stored } = await describeBytes(randomBytes(1000), "bad-key.bin");
        const response = await sendOne(client, session.token, declared, stored, {
          "idempotency-key": key,
        });
        expect(await errorOf(response)).toEqual({
          status: 400,
          code: "invalid_request",
          message: "Idempotency-Key must be 1 to 200 characters",
        });
        expect(await uploadsOf(session.sessionId)).toEqual([]);
        expect(await filesOf(session.token)).toEqual([]);
      });
    });
  });
}
