import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { sessionUsage } from "../../src/db/sessions";
import { SINGLE_UPLOAD_MAX_BYTES } from "../../src/services/uploads/single-upload";
import { createBlobStore, uploadKey } from "../../src/storage";
import { backends } from "../support/backends";
import { gzip, logText, randomBytes, sha256Hex } from "../support/bytes";
import { ADMIN_TOKEN, errorOf, RelayClient } from "../support/relay-client";
import { declare, describe as describeBytes, type Declared } from "../support/send";
import type { FileRecord } from "../../src/wire-types";

/** `POST /v1/single-uploads`: the declaration in the query, the stored bytes as the body. */
function sendOne(
  client: RelayClient,
  token: string,
  declared: Declared,
  body: Uint8Array,
  headers: Record<string, string> = {},
): Promise<Response> {
  const { name, size, sha256, contentType, encoding, storedSha256 } = declared;
  const query = new URLSearchParams({ name, size: String(size), sha256, encoding, storedSha256 });
  if (contentType) query.set("contentType", contentType);
  return client.call("POST", `/v1/single-uploads?${query}`, {
    token,
    body,
    headers: { "content-length": String(body.byteLength), ...headers },
  });
}

/** The D1 binding, counting its round trips: each statement run and each batch is one. */
function countingDb(db: D1Database): { db: D1Database; trips: () => number } {
  let trips = 0;
  const real = new WeakMap<object, D1PreparedStatement>();
  const runs = new Set<PropertyKey>(["first", "run", "all", "raw"]);
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const wrapped = new Proxy(statement, {
      get(target, key) {
        if (key === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        const value: unknown = Reflect.get(target, key, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (runs.has(key)) trips++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    real.set(wrapped, statement);
    return wrapped;
  };
  const counted = new Proxy(db, {
    get(target, key) {
      if (key === "prepare") return (sql: string) => wrap(target.prepare(sql));
      if (key === "batch") {
        return (statements: D1PreparedStatement[]) => {
          trips++;
          return target.batch(statements.map((s) => real.get(s) ?? s));
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
  return { db: counted, trips: () => trips };
}

interface UploadRow {
  id: string;
  status: string;
  stored_key: string;
}

for (const backend of backends()) {
  describe(`POST /v1/single-uploads on ${backend.name}`, { timeout: 60_000 }, () => {
    const client = new RelayClient(backend.env);
    const store = createBlobStore(readConfig(backend.env), backend.env);

    const uploadsOf = async (sessionId: string) =>
      (
        await backend.env.DB.prepare(
          "SELECT id, status, stored_key FROM uploads WHERE session_id = ?",
        )
          .bind(sessionId)
          .all<UploadRow>()
      ).results;

    const filesOf = async (token: string) => {
      const listed = await client.call("GET", "/v1/files", { token });
      return ((await listed.json()) as { files: FileRecord[] }).files;
    };

    /** The bytes the session holds against its quota now. */
    const usageOf = (sessionId: string) => sessionUsage(backend.env.DB, sessionId, Date.now());

    /** Sends honest bytes in one request; returns the file and the session. */
    async function sendHonest(
      bytes: Uint8Array,
      encoding: "identity" | "gzip",
      session?: { sessionId: string; token: string },
    ) {
      const owner = session ?? (await client.mintSession());
      const { declared, stored } = await describeBytes(bytes, "notes.txt", encoding);
      const response = await sendOne(client, owner.token, declared, stored);
      expect(response.status, await response.clone().text()).toBe(201);
      return { file: (await response.json()) as FileRecord, session: owner, stored };
    }

    /**
     * `bytes` sent as they are by a session of a new owner, and another session of that owner
     * (minted with `body`), whose one-request upload of them is a dedup hit.
     */
    async function siblingOfHolder(bytes: Uint8Array, body: Record<string, unknown> = {}) {
      const owner = `single-${crypto.randomUUID()}`;
      const held = await sendHonest(bytes, "identity", await client.mintSession({ owner }));
      return { held, session: await client.mintSession({ owner, ...body }) };
    }

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

    /** A lie answers 422 content_mismatch and keeps nothing: no file, no object, no quota held. */
    async function expectLieRefused(declared: Declared, body: Uint8Array): Promise<void> {
      const session = await client.mintSession();
      const response = await sendOne(client, session.token, declared, body);
      expect(await errorOf(response)).toMatchObject({ status: 422, code: "content_mismatch" });
      expect(await filesOf(session.token)).toEqual([]);
      const uploads = await uploadsOf(session.sessionId);
      expect(uploads.map((u) => u.status)).toEqual(["rejected"]);
      expect(await store.head(uploads[0]!.stored_key)).toBeNull();
      const probe = await declare(client, session.token, {
        name: "v",
        size: declared.size,
        sha256: declared.sha256,
      });
      expect(await probe.json()).toEqual({ status: "missing" });
    }

    it("refuses a body whose stored SHA-256 is not the declared one: 422, nothing stored", async () => {
      const { declared } = await describeBytes(randomBytes(50_000), "a.bin");
      await expectLieRefused(declared, randomBytes(50_000));
    });

    it("refuses an empty body declared as other content: 422, nothing stored", async () => {
      const { declared } = await describeBytes(new Uint8Array(0), "empty.bin");
      const other = await sha256Hex(randomBytes(32));
      await expectLieRefused(
        { ...declared, sha256: other, storedSha256: other },
        new Uint8Array(0),
      );
    });

    it("refuses gzip that inflates to other content than declared: 422, nothing stored", async () => {
      const { declared: honest } = await describeBytes(logText(3000), "victim.log", "gzip");
      const evil = await gzip(logText(3000));
      await expectLieRefused(
        { ...honest, storedSize: evil.byteLength, storedSha256: await sha256Hex(evil) },
        evil,
      );
    });

    it("refuses gzip that inflates past the declared size (a bomb), cut off there: 422", async () => {
      const bomb = await gzip(new Uint8Array(8_000_000));
      await expectLieRefused(
        {
          name: "small.txt",
          size: 100_000,
          sha256: await sha256Hex(new Uint8Array(100_000)),
          encoding: "gzip",
          storedSize: bomb.byteLength,
          storedSha256: await sha256Hex(bomb),
        },
        bomb,
      );
    });

    /** The one-request answer equals the declare's answer for the same declaration. */
    async function expectSameRefusal(
      clientFor: RelayClient,
      session: { sessionId: string; token: string },
      declared: Declared,
      body: Uint8Array,
      code: string,
    ) {
      const viaDeclare = await errorOf(await declare(clientFor, session.token, declared));
      const viaOne = await errorOf(await sendOne(clientFor, session.token, declared, body));
      expect(viaOne).toEqual(viaDeclare);
      expect(viaOne.code).toBe(code);
      expect(await uploadsOf(session.sessionId)).toEqual([]);
    }

    it("answers over quota with the declare's 413 quota_exceeded, reading nothing", async () => {
      const session = await client.mintSession({ quotaBytes: 1000 });
      const bytes = randomBytes(2000);
      const { declared, stored } = await describeBytes(bytes, "big.bin");
      await expectSameRefusal(client, session, declared, stored, "quota_exceeded");
    });

    it("answers over MAX_FILE_BYTES with the declare's 413 file_too_large", async () => {
      const small = new RelayClient({ ...backend.env, MAX_FILE_BYTES: "1000" });
      const session = await small.mintSession();
      const { declared, stored } = await describeBytes(randomBytes(2000), "big.bin");
      await expectSameRefusal(small, session, declared, stored, "file_too_large");
    });

    it.each(["../escape.txt", "bad\u202ename.txt", " ", ".."])(
      "answers the name %j with the declare's 400 invalid_request",
      async (name) => {
        const session = await client.mintSession();
        const { declared, stored } = await describeBytes(randomBytes(100), "x");
        await expectSameRefusal(client, session, { ...declared, name }, stored, "invalid_request");
      },
    );

    it("refuses more stored bytes than one request takes with 413, before reading them", async () => {
      const session = await client.mintSession();
      const { declared, stored } = await describeBytes(
        randomBytes(SINGLE_UPLOAD_MAX_BYTES + 1),
        "big.bin",
      );
      const response = await sendOne(client, session.token, declared, stored);
      expect(await errorOf(response)).toMatchObject({ status: 413, code: "payload_too_large" });
      expect(await uploadsOf(session.sessionId)).toEqual([]);
    });

    it("refuses a Content-Length other than the body's with nothing kept", async () => {
      const session = await client.mintSession();
      const { declared, stored } = await describeBytes(randomBytes(1000), "a.bin");
      const response = await sendOne(client, session.token, declared, stored.subarray(0, 900), {
        "content-length": "1000",
      });
      expect(await errorOf(response)).toMatchObject({ status: 400, code: "length_mismatch" });
      expect(await filesOf(session.token)).toEqual([]);
      for (const upload of await uploadsOf(session.sessionId)) {
        expect(upload.status).toBe("rejected");
        expect(await store.head(upload.stored_key)).toBeNull();
      }
    });

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

    it("refuses bytes over what the session still holds with 413 quota_exceeded, storing nothing", async () => {
      const session = await client.mintSession({ quotaBytes: 3000 });
      const first = await sendHonest(randomBytes(2000), "identity", session);
      const { declared, stored } = await describeBytes(randomBytes(2000), "more.bin");
      const viaDeclare = await errorOf(await declare(client, session.token, declared));
      const viaOne = await errorOf(await sendOne(client, session.token, declared, stored));
      expect(viaOne).toEqual(viaDeclare);
      expect(viaOne).toEqual({
        status: 413,
        code: "quota_exceeded",
        message: "2000 more bytes would exceed the session's byte quota",
      });
      expect((await filesOf(session.token)).map((f) => f.fileId)).toEqual([first.file.fileId]);
      expect((await uploadsOf(session.sessionId)).map((u) => u.status)).toEqual(["completed"]);
    });

    it("refuses a dedup hit over the quota the same way, adding no file", async () => {
      const { held, session } = await siblingOfHolder(randomBytes(2000), { quotaBytes: 3000 });
      const mine = await sendHonest(randomBytes(2000), "identity", session);
      const { declared } = await describeBytes(held.stored, "held.bin");
      const viaDeclare = await errorOf(await declare(client, session.token, declared));
      const viaOne = await errorOf(await sendOne(client, session.token, declared, held.stored));
      expect(viaOne).toEqual(viaDeclare);
      expect(viaOne).toMatchObject({ status: 413, code: "quota_exceeded" });
      expect((await filesOf(session.token)).map((f) => f.fileId)).toEqual([mine.file.fileId]);
      expect(await uploadsOf(session.sessionId)).toHaveLength(1);
    });

    it("answers content the scope holds with another size as the declare does: 400, nothing kept", async () => {
      const { held, session } = await siblingOfHolder(randomBytes(5000));
      const { declared } = await describeBytes(held.stored, "held.bin");
      const body = randomBytes(5001);
      const lie = { ...declared, size: 5001, storedSize: 5001 };
      const viaDeclare = await errorOf(await declare(client, session.token, lie));
      const viaOne = await errorOf(await sendOne(client, session.token, lie, body));
      expect(viaOne).toEqual(viaDeclare);
      expect(viaOne).toEqual({
        status: 400,
        code: "invalid_request",
        message: "size does not match the content with this sha256",
      });
      expect(await filesOf(session.token)).toEqual([]);
      expect(await uploadsOf(session.sessionId)).toEqual([]);
    });

    it("refuses gzip declared larger than gzip can make the file as the declare does", async () => {
      const session = await client.mintSession();
      const bytes = randomBytes(100);
      const padded = new Uint8Array(4096);
      padded.set(await gzip(bytes));
      const { declared } = await describeBytes(bytes, "tiny.bin");
      const claim = {
        ...declared,
        encoding: "gzip" as const,
        storedSize: padded.byteLength,
        storedSha256: await sha256Hex(padded),
      };
      const viaDeclare = await errorOf(await declare(client, session.token, claim));
      const viaOne = await errorOf(await sendOne(client, session.token, claim, padded));
      expect(viaOne).toEqual(viaDeclare);
      expect(viaOne).toMatchObject({ status: 400, code: "invalid_request" });
      expect(await uploadsOf(session.sessionId)).toEqual([]);
    });

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

    describe("for a session that may no longer upload", () => {
      const revoke = (session: { sessionId: string }) => client.revokeSession(session.sessionId);
      // The token stays valid: only the row says the session is over.
      const expire = async (session: { sessionId: string }) => {
        await backend.env.DB.prepare("UPDATE sessions SET expires_at = ? WHERE id = ?")
          .bind(Date.now() - 1000, session.sessionId)
          .run();
      };
      const forget = async (session: { sessionId: string }) => {
        await backend.env.DB.prepare("DELETE FROM sessions WHERE id = ?")
          .bind(session.sessionId)
          .run();
      };

      const blobExpiry = async (sha256: string) =>
        (
          await backend.env.DB.prepare("SELECT expires_at FROM blobs WHERE sha256 = ?")
            .bind(sha256)
            .first<{ expires_at: number }>()
        )?.expires_at;

      /** What the session has in D1: files (keyed or not) and uploads of any status. */
      const rowsOf = async (sessionId: string) => {
        const count = async (sql: string) =>
          (await backend.env.DB.prepare(sql).bind(sessionId).first<{ n: number }>())?.n;
        return {
          files: await count("SELECT COUNT(*) AS n FROM files WHERE session_id = ?"),
          keyed: await count(
            "SELECT COUNT(*) AS n FROM files WHERE session_id = ? AND idempotency_key IS NOT NULL",
          ),
          uploads: await count("SELECT COUNT(*) AS n FROM uploads WHERE session_id = ?"),
        };
      };

      it.each([
        [
          "a revoked",
          revoke,
          { status: 401, code: "session_revoked", message: "session has been revoked" },
        ],
        [
          "an expired",
          expire,
          { status: 401, code: "invalid_token", message: "session has expired" },
        ],
        [
          "an unknown",
          forget,
          { status: 401, code: "invalid_token", message: "token is invalid or expired" },
        ],
      ] as const)(
        "answers %s session as every session route does, inserting nothing and extending no blob",
        async (_, end, refusal) => {
          const { held, session } = await siblingOfHolder(randomBytes(4000));
          // Pushed back so that a dedup hit would push it out again.
          await backend.env.DB.prepare("UPDATE blobs SET expires_at = ? WHERE sha256 = ?")
            .bind(Date.now() + 60_000, held.file.sha256)
            .run();
          const expiry = await blobExpiry(held.file.sha256);
          await end(session);
          const hit = await describeBytes(held.stored, "hit.bin");
          const fresh = await describeBytes(randomBytes(3000), "new.bin");
          const key = { "idempotency-key": crypto.randomUUID() };
          const answers = [
            await sendOne(client, session.token, hit.declared, hit.stored, key),
            await sendOne(client, session.token, fresh.declared, fresh.stored, key),
            await sendOne(client, session.token, fresh.declared, fresh.stored),
          ];
          for (const answer of answers) expect(await errorOf(answer)).toEqual(refusal);
          const elsewhere = await client.call("GET", "/v1/files", { token: session.token });
          expect(await errorOf(elsewhere)).toEqual(refusal);
          expect(await rowsOf(session.sessionId)).toEqual({ files: 0, keyed: 0, uploads: 0 });
          expect(await blobExpiry(held.file.sha256)).toBe(expiry);
        },
      );

      it.each([
        ["a query that is not a declaration", { size: "-1" }, {}, "invalid_request"],
        ["no Content-Length", {}, { "content-length": "" }, "length_required"],
        ["a bad Idempotency-Key", {}, { "idempotency-key": "" }, "invalid_request"],
        [
          "a size over MAX_FILE_BYTES",
          { size: String(10 * 1024 ** 4), encoding: "gzip" },
          {},
          "file_too_large",
        ],
        ["a size over the whole quota", { size: "5000", encoding: "gzip" }, {}, "quota_exceeded"],
      ])(
        "tells a revoked session so before anything about %s",
        async (_, query, headers, liveCode) => {
          const session = await client.mintSession({ quotaBytes: 4000 });
          const { declared, stored } = await describeBytes(randomBytes(100), "late.bin");
          const params = new URLSearchParams({
            name: declared.name,
            size: String(declared.size),
            sha256: declared.sha256,
            encoding: declared.encoding,
            storedSha256: declared.storedSha256,
            ...query,
          });
          const sent: Record<string, string> = {
            "content-length": String(stored.byteLength),
            ...headers,
          };
          if (sent["content-length"] === "") delete sent["content-length"];
          const send = () =>
            client.call("POST", `/v1/single-uploads?${params}`, {
              token: session.token,
              body: stored,
              headers: sent,
            });
          expect((await errorOf(await send())).code).toBe(liveCode);
          await revoke(session);
          expect(await errorOf(await send())).toEqual({
            status: 401,
            code: "session_revoked",
            message: "session has been revoked",
          });
          expect(await rowsOf(session.sessionId)).toEqual({ files: 0, keyed: 0, uploads: 0 });
        },
      );

      it.each([
        ["", { status: 401, code: "unauthorized" }],
        ["not-a-token", { status: 401, code: "invalid_token" }],
        [ADMIN_TOKEN, { status: 403, code: "forbidden", message: "this route is for sandboxes" }],
      ])("answers the bearer %j as before", async (token, refusal) => {
        const { declared, stored } = await describeBytes(randomBytes(100), "who.bin");
        const response = await sendOne(client, token, declared, stored);
        expect(await errorOf(response)).toMatchObject(refusal);
      });
    });

    it("refuses a query that is not a declaration with 400 invalid_request", async () => {
      const { token } = await client.mintSession();
      const response = await client.call("POST", "/v1/single-uploads?name=a.bin&size=-1", {
        token,
        body: new Uint8Array(1),
        headers: { "content-length": "1" },
      });
      expect(await errorOf(response)).toMatchObject({ status: 400, code: "invalid_request" });
    });
  });
}
