import { describe, expect, it } from "vitest";
import type { FileRecord } from "../../src/wire-types";
import { backends } from "../support/backends";
import { randomBytes } from "../support/bytes";
import { ADMIN_TOKEN, RelayClient } from "../support/relay-client";
import { upload } from "../support/send";
import { answerOf, fakes, isolationHarness, sleep, UNKNOWN } from "./isolation-review-harness";

/** Isolation of files: another session's file reads as one that never existed, listings show only the caller's own. */
for (const backend of backends()) {
  describe(`sandbox isolation on ${backend.name}`, { timeout: 120_000 }, () => {
    const { client, cast, fileRecord, linksOf, telegramPostsTo, seed, createRequest, fileRoutes } =
      isolationHarness(backend);

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
  });
}
