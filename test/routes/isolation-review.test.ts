import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { hexToBase64 } from "../../src/encoding";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";
import type { DeliveryRecord, FileRecord, UploadAnswer } from "../../src/wire-types";
import { backends } from "../support/backends";
import { logText, randomBytes, sha256Hex } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { ADMIN_TOKEN, ORIGIN, RelayClient } from "../support/relay-client";
import { complete, declare, describe as describeBytes, putBytes, upload } from "../support/send";

/**
 * A hostile review of sandbox-to-sandbox isolation: an attacker holds one session token and
 * names another session's ids (files, inbox items, uploads, upload-link requests and their
 * uploads, delivery Idempotency-Keys). A session of the same owner shares dedup and nothing
 * else; a session of another owner shares nothing; a revoked or expired token acts on
 * nothing. Every refusal must read exactly as the one for an id that never existed, so no
 * answer tells the attacker what another session holds.
 */

const fakes = new PlatformFakes();

/** Ids of the right shape that no row has. */
const UNKNOWN = {
  file: "fil_AAAAAAAAAAAAAAAAAAAAAA",
  upload: "upl_AAAAAAAAAAAAAAAAAAAAAA",
  item: "inb_AAAAAAAAAAAAAAAAAAAAAA",
  request: "req_AAAAAAAAAAAAAAAAAAAAAA",
};

interface Session {
  sessionId: string;
  token: string;
  /** The chat the session may deliver to. */
  chat: string;
}

interface InboxItem {
  itemId: string;
  name: string;
  sha256: string;
  file: FileRecord;
}

/** A response as a comparable value: status, and the JSON body unless it has none. */
async function answerOf(response: Response): Promise<{ status: number; body: unknown }> {
  const text = await response.text();
  return { status: response.status, body: text === "" ? null : (JSON.parse(text) as unknown) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const backend of backends()) {
  describe(`sandbox isolation on ${backend.name}`, { timeout: 120_000 }, () => {
    const client = new RelayClient(fakes.env(backend.env));

    async function mint(body: Record<string, unknown>): Promise<Session> {
      const chat = `telegram:${uniqueChatId()}`;
      const session = await client.mintSession({ destinations: [chat], ...body });
      return { ...session, chat };
    }

    const revoke = (session: Session) => client.revokeSession(session.sessionId);

    /**
     * The victim, a session of its owner (`sibling`), one of another owner (`stranger`), and
     * two tokens that no longer work: a revoked and an expired session of the victim's owner.
     */
    async function cast() {
      const owner = `victim-owner-${crypto.randomUUID()}`;
      const expired = await mint({ owner, ttlSeconds: 1 });
      const expiresAt = Date.now() + 1000;
      const victim = await mint({ owner });
      const sibling = await mint({ owner });
      const stranger = await mint({ owner: `stranger-${crypto.randomUUID()}` });
      const revoked = await mint({ owner });
      await revoke(revoked);
      return {
        victim,
        sibling,
        stranger,
        revoked,
        expired,
        /** Resolves once the expired session's token has stopped working. */
        expiry: async () => {
          await sleep(Math.max(0, expiresAt - Date.now()) + 1100);
          const refused = await client.call("GET", "/v1/files", { token: expired.token });
          expect(refused.status).toBe(401);
        },
      };
    }

    const fileRecord = async (token: string, fileId: string) =>
      answerOf(await client.call("GET", `/v1/files/${fileId}`, { token }));

    async function linksOf(fileId: string): Promise<number> {
      const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM links WHERE file_id = ?")
        .bind(fileId)
        .first<{ n: number }>();
      return row?.n ?? 0;
    }

    async function telegramPostsTo(chat: string): Promise<number> {
      const id = chat.split(":")[1];
      const posts = await fakes.requests("telegram");
      return posts.filter(
        (post) =>
          post.fields.chat_id === id || (post.json as { chat_id?: unknown })?.chat_id === id,
      ).length;
    }

    async function inboxOf(token: string): Promise<InboxItem[]> {
      const response = await client.call("GET", "/v1/inbox", { token });
      expect(response.status).toBe(200);
      return ((await response.json()) as { items: InboxItem[] }).items;
    }

    async function seed(session: Session, name: string, bytes: Uint8Array): Promise<InboxItem> {
      const response = await client.call(
        "POST",
        `/v1/sessions/${session.sessionId}/inbox?name=${encodeURIComponent(name)}`,
        { token: ADMIN_TOKEN, body: bytes, headers: { "content-length": String(bytes.length) } },
      );
      expect(response.status).toBe(201);
      return response.json();
    }

    async function createRequest(token: string, body: object = {}): Promise<CreatedRequest> {
      const response = await client.call("POST", "/v1/requests", { token, json: body });
      expect(response.status).toBe(201);
      return response.json();
    }

    /** Every sandbox route that takes a file id, as the attacker would call it. */
    function fileRoutes(attacker: Session) {
      return [
        ["GET", (id: string) => `/v1/files/${id}`, {}],
        ["GET", (id: string) => `/v1/files/${id}/content`, {}],
        ["GET", (id: string) => `/v1/files/${id}/content`, { headers: { range: "bytes=10-19" } }],
        ["GET", (id: string) => `/v1/files/${id}/content`, { headers: { range: "bytes=-1" } }],
        ["HEAD", (id: string) => `/v1/files/${id}/content`, {}],
        ["GET", (id: string) => `/v1/files/${id}/deliveries`, {}],
        ["POST", (id: string) => `/v1/files/${id}/links`, { json: { maxDownloads: 5 } }],
        ["POST", (id: string) => `/v1/files/${id}/links`, { json: { bogus: true } }],
        [
          "POST",
          (id: string) => `/v1/files/${id}/deliveries`,
          { json: { to: attacker.chat }, headers: { "idempotency-key": "steal-1" } },
        ],
        ["DELETE", (id: string) => `/v1/files/${id}`, {}],
      ] as const;
    }

    it("answers another session's file, of the same owner or another, exactly as an id that never existed", async () => {
      const { victim, sibling, stranger } = await cast();
      const bytes = randomBytes(4000);
      const file = await upload(client, victim.token, bytes, `victim-${crypto.randomUUID()}.bin`);
      const before = await fileRecord(victim.token, file.fileId);
      expect(before.status).toBe(200);

      for (const attacker of [sibling, stranger]) {
        for (const [method, path, options] of fileRoutes(attacker)) {
          const call = (id: string) =>
            client.call(method, path(id), { token: attacker.token, ...options });
          const theirs = await answerOf(await call(file.fileId));
          const nobodys = await answerOf(await call(UNKNOWN.file));
          expect([method, path(":id"), theirs]).toEqual([method, path(":id"), nobodys]);
          expect(theirs.status).toBe(404);
          if (method !== "HEAD")
            expect(theirs.body).toEqual({
              error: { code: "file_not_found", message: "no such file" },
            });
        }
        // Nothing of the victim's reached the attacker's lists, its chat or its files.
        const listed = await client.call("GET", "/v1/files", { token: attacker.token });
        expect(await listed.json()).toEqual({ files: [] });
        expect(await telegramPostsTo(attacker.chat)).toBe(0);
      }

      // The file is untouched: same record, same bytes (whole and ranged), no link, no delivery.
      const after = await fileRecord(victim.token, file.fileId);
      const stable = (record: unknown) => ({ ...(record as object), url: "", urlExpiresAt: "" });
      expect(stable(after.body)).toEqual(stable(before.body));
      const whole = await client.call("GET", `/v1/files/${file.fileId}/content`, {
        token: victim.token,
      });
      expect(new Uint8Array(await whole.arrayBuffer())).toEqual(bytes);
      const ranged = await client.call("GET", `/v1/files/${file.fileId}/content`, {
        token: victim.token,
        headers: { range: "bytes=10-19" },
      });
      expect(ranged.status).toBe(206);
      expect(new Uint8Array(await ranged.arrayBuffer())).toEqual(bytes.subarray(10, 20));
      expect(await linksOf(file.fileId)).toBe(0);
      const deliveries = await client.call("GET", `/v1/files/${file.fileId}/deliveries`, {
        token: victim.token,
      });
      expect(await deliveries.json()).toEqual({ deliveries: [] });
    });

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

    it("lists only the caller's own files and inbox: no name, hash, size or id of another session", async () => {
      const { victim, sibling, stranger } = await cast();
      const tag = crypto.randomUUID();
      const fileBytes = randomBytes(6007);
      const file = await upload(client, victim.token, fileBytes, `secret-${tag}.bin`);
      const item = await seed(victim, `seeded-${tag}.csv`, randomBytes(5003));
      const request = await createRequest(victim.token, { name: `wanted-${tag}.pdf` });
      const secrets = [
        victim.sessionId,
        file.fileId,
        file.sha256,
        tag,
        item.itemId,
        item.file.fileId,
        item.sha256,
        request.requestId,
      ];

      for (const attacker of [sibling, stranger]) {
        for (const path of ["/v1/files", `/v1/files?sessionId=${victim.sessionId}`, "/v1/inbox"]) {
          const response = await client.call("GET", path, { token: attacker.token });
          expect(response.status).toBe(200);
          const text = await response.text();
          expect(JSON.parse(text)).toEqual(path === "/v1/inbox" ? { items: [] } : { files: [] });
          for (const secret of secrets) expect(text).not.toContain(secret);
        }
      }
      // The operator still sees the victim's files by session.
      const operator = await client.call("GET", `/v1/files?sessionId=${victim.sessionId}`, {
        token: ADMIN_TOKEN,
      });
      const ids = ((await operator.json()) as { files: FileRecord[] }).files.map((f) => f.fileId);
      expect(ids.sort()).toEqual([file.fileId, item.file.fileId].sort());
    });

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

    it("lets a sibling's delete of its dedup copy leave the shared content whole", async () => {
      const { victim, sibling } = await cast();
      const bytes = randomBytes(9000);
      const file = await upload(client, victim.token, bytes, "shared.bin");
      const copy = await upload(client, sibling.token, bytes, "copy.bin");
      expect(copy).toMatchObject({ deduped: true, uploadedBytes: 0, sessionId: sibling.sessionId });
      expect(copy.fileId).not.toBe(file.fileId);
      expect(
        (await client.call("DELETE", `/v1/files/${copy.fileId}`, { token: sibling.token })).status,
      ).toBe(200);
      const ranged = await client.call("GET", `/v1/files/${file.fileId}/content`, {
        token: victim.token,
        headers: { range: "bytes=8990-" },
      });
      expect(ranged.status).toBe(206);
      expect(new Uint8Array(await ranged.arrayBuffer())).toEqual(bytes.subarray(8990));
      expect((await fileRecord(victim.token, file.fileId)).status).toBe(200);
    });

    it("answers another session's expired or deleted file as unknown, never 410", async () => {
      const short = new RelayClient({ ...fakes.env(backend.env), FILE_TTL_SECONDS: "2" });
      const owner = `ttl-owner-${crypto.randomUUID()}`;
      const victim = await short.mintSession({ owner });
      const sibling = await short.mintSession({ owner });
      const stranger = await short.mintSession({ owner: `ttl-stranger-${crypto.randomUUID()}` });
      const expiring = await upload(short, victim.token, randomBytes(1000), "soon.bin");
      const deleted = await upload(short, victim.token, randomBytes(1100), "gone.bin");
      expect(
        (await short.call("DELETE", `/v1/files/${deleted.fileId}`, { token: victim.token })).status,
      ).toBe(200);
      await sleep(Date.parse(expiring.expiresAt) - Date.now() + 200);

      const get = async (token: string, id: string) =>
        answerOf(await short.call("GET", `/v1/files/${id}`, { token }));
      expect(await get(victim.token, expiring.fileId)).toMatchObject({
        status: 410,
        body: { error: { code: "file_expired" } },
      });
      for (const attacker of [sibling, stranger]) {
        const unknown = await get(attacker.token, UNKNOWN.file);
        expect(await get(attacker.token, expiring.fileId)).toEqual(unknown);
        expect(await get(attacker.token, deleted.fileId)).toEqual(unknown);
      }
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

    // Found by this review: a dedup hit took the form (encoding, object) of the content's blob,
    // which another scope's later upload (or link PUT, attachment, seed) re-homes onto its
    // own copy in its own encoding. On s3 an identity file answers 307 to the store and a gzip
    // one 200 from the relay, so the caller's own dedup hit told it whether another owner had
    // sent the content meanwhile. A dedup hit now takes the form of the scope's own file.
    if (backend.name === "s3")
      it("serves a dedup hit the same whether or not another owner sent the content since", async () => {
        const mine = await mint({ owner: `watcher-${crypto.randomUUID()}` });
        const other = await mint({ owner: `other-${crypto.randomUUID()}` });
        const content = logText(4000);
        // The watcher holds the content, stored gzip (as the shim sends compressible files).
        const held = await upload(client, mine.token, content, "doc.txt", "gzip");
        expect(held.status).toBe("verified");
        const download = async (fileId: string) => {
          const response = await client.fetch(`${ORIGIN}/v1/files/${fileId}/content`, {
            headers: { authorization: `Bearer ${mine.token}` },
            redirect: "manual",
          });
          await response.body?.cancel();
          return response.status;
        };
        // A dedup hit through a declare, and through the one-request route.
        const probe = async () => {
          const hit = await upload(client, mine.token, content, "probe.txt", "gzip");
          expect(hit.deduped).toBe(true);
          const { declared, stored } = await describeBytes(content, "probe-one.txt", "gzip");
          const { name, size, sha256, encoding, storedSha256 } = declared;
          const query = new URLSearchParams({ name, sha256, encoding, storedSha256 });
          query.set("size", String(size));
          const one = await client.call("POST", `/v1/single-uploads?${query}`, {
            token: mine.token,
            body: stored,
            headers: { "content-length": String(stored.byteLength) },
          });
          const oneHit = (await one.json()) as FileRecord;
          expect(oneHit.deduped).toBe(true);
          return [await download(hit.fileId), await download(oneHit.fileId)];
        };
        const before = await probe();
        expect(before).toEqual([200, 200]);
        // Another owner sends the same bytes as they are.
        const theirs = await upload(client, other.token, content, "doc.txt");
        expect(theirs.deduped).toBe(false);
        expect(await probe()).toEqual(before);
      });

    // Found by this review: on r2, where the relay cannot copy objects, a verified upload
    // moved onto the content's existing blob whatever that blob's encoding, so a file sent as
    // it is, whose content another owner had stored gzip, was inflated from the start on every
    // read: a Range at its end took the time of inflating the whole file (about 20× the same
    // Range on a file nobody else holds, at 26 MB), an existence oracle that a timer reads.
    // A file now moves only onto a blob of the same stored bytes: the cause is checked here
    // (the file's stored form), not a timer.
    if (backend.name === "r2")
      it("keeps a file on stored bytes of its own encoding when another owner holds its content gzipped", async () => {
        const holder = await mint({ owner: `holder-${crypto.randomUUID()}` });
        const prober = await mint({ owner: `prober-${crypto.randomUUID()}` });
        const held = logText(400_000);
        const fresh = logText(400_000);
        const holderFile = await upload(client, holder.token, held, "held.log", "gzip");
        const guessed = await upload(client, prober.token, held, "guess.log");
        const control = await upload(client, prober.token, fresh, "control.log");
        expect([guessed.deduped, control.deduped]).toEqual([false, false]);
        const storedForm = (fileId: string) =>
          env.DB.prepare("SELECT encoding, stored_key FROM files WHERE id = ?")
            .bind(fileId)
            .first<{ encoding: string; stored_key: string }>();
        const [holderRow, guessedRow, controlRow] = await Promise.all(
          [holderFile, guessed, control].map((file) => storedForm(file.fileId)),
        );
        expect(holderRow?.encoding).toBe("gzip");
        expect(guessedRow?.encoding).toBe("identity");
        expect(controlRow?.encoding).toBe("identity");
        expect(guessedRow?.stored_key).not.toBe(holderRow?.stored_key);
        const tail = await client.call("GET", `/v1/files/${guessed.fileId}/content`, {
          token: prober.token,
          headers: { range: `bytes=${guessed.size - 16}-` },
        });
        expect(tail.status).toBe(206);
        expect(new Uint8Array(await tail.arrayBuffer())).toEqual(held.subarray(held.length - 16));
      });
  });
}
