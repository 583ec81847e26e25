import { describe, expect, it } from "vitest";
import { SINGLE_UPLOAD_MAX_BYTES } from "../../src/services/uploads/single-upload";
import { backends } from "../support/backends";
import { gzip, logText, randomBytes, sha256Hex } from "../support/bytes";
import { errorOf, RelayClient } from "../support/relay-client";
import { declare, describe as describeBytes, type Declared } from "../support/send";
import { sendOne, singleUploadHarness } from "./single-uploads-harness";

/** `POST /v1/single-uploads` refusing lies, oversize bodies and what the declare refuses, keeping nothing. */
for (const backend of backends()) {
  describe(`POST /v1/single-uploads on ${backend.name}`, { timeout: 60_000 }, () => {
    const { client, store, uploadsOf, filesOf, sendHonest, siblingOfHolder } =
      singleUploadHarness(backend);

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
