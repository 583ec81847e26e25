import { describe, expect, it } from "vitest";
import { backends } from "../support/backends";
import { randomBytes } from "../support/bytes";
import { ADMIN_TOKEN, errorOf } from "../support/relay-client";
import { describe as describeBytes } from "../support/send";
import { sendOne, singleUploadHarness } from "./single-uploads-harness";

/** `POST /v1/single-uploads` from a session that may no longer upload, and from bad bearers. */
for (const backend of backends()) {
  describe(`POST /v1/single-uploads on ${backend.name}`, { timeout: 60_000 }, () => {
    const { client, siblingOfHolder } = singleUploadHarness(backend);

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
  });
}
