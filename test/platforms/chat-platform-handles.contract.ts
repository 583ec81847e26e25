import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { DeliveryRecord } from "../../src/wire-types";
import { randomBytes } from "../support/bytes";
import { RelayClient } from "../support/relay-client";
import { upload } from "../support/send";
import { fakes, type HandleHarness } from "./contract/harness";

/**
 * What every platform that can send uploaded content again by a handle (Telegram `file_id`,
 * WhatsApp media id) must do: the bytes go up once per bot or number and owner scope, and a
 * handle the platform refuses is replaced by a fresh upload's.
 */
export function handleContract<Ref>(h: HandleHarness<Ref>): void {
  describe.concurrent(`chat platform handle contract: ${h.name}`, () => {
    const client = new RelayClient(fakes.env(env, h.env));

    async function session() {
      const chats = [h.newChat(), h.newChat(), h.newChat()];
      const { token } = await client.mintSession({
        destinations: chats.map((c) => `${h.name}:${c}`),
      });
      const deliver = async (fileId: string, chat: string) =>
        (await (
          await client.call("POST", `/v1/files/${fileId}/deliveries`, {
            token,
            json: { to: `${h.name}:${chat}` },
          })
        ).json()) as DeliveryRecord;
      return { token, chats, deliver };
    }

    const storedHandles = async (sha256: string) =>
      (
        await env.DB.prepare(
          "SELECT handle FROM platform_handles WHERE platform = ? AND sha256 = ?",
        )
          .bind(h.name, sha256)
          .all<{ handle: string }>()
      ).results.map((r) => r.handle);

    it("sends content again by its handle: the bytes go up once; a refused handle is replaced", async () => {
      const { token, chats, deliver } = await session();
      const [a, b, c] = chats as [string, string, string];
      const file = await upload(client, token, randomBytes(20_000), "again.bin");
      expect(await deliver(file.fileId, a)).toMatchObject({
        status: "delivered",
        uploadedBytes: 20_000,
      });
      const [first] = await storedHandles(file.sha256);
      const second = await deliver(file.fileId, b);
      expect(second).toMatchObject({ status: "delivered", uploadedBytes: 0 });
      expect(second.messageId).toMatch(h.messageId);
      expect(await h.uploadsOf(file.sha256)).toBe(1);
      expect(await h.handlesSentTo(b)).toEqual([first]);
      // The platform may answer with a new handle for the same content; one is kept.
      const [handle, ...others] = await storedHandles(file.sha256);
      expect(others).toEqual([]);

      // The platform forgot the content (WhatsApp after 30 days): one fresh upload, its handle kept.
      await env.DB.prepare("UPDATE platform_handles SET handle = ? WHERE handle = ?")
        .bind(h.staleHandle, handle)
        .run();
      expect(await deliver(file.fileId, c)).toMatchObject({
        status: "delivered",
        uploadedBytes: 20_000,
      });
      expect(await h.uploadsOf(file.sha256)).toBe(2);
      expect((await h.handlesSentTo(c))[0]).toBe(h.staleHandle);
      const kept = await storedHandles(file.sha256);
      expect(kept).toHaveLength(1);
      expect(kept[0]).not.toBe(h.staleHandle);
      expect(kept[0]).not.toBe(handle);
    });

    it("never reuses a handle across owner scopes: another session's same bytes go up again", async () => {
      const [one, two] = [await session(), await session()];
      const bytes = randomBytes(10_000);
      const fileOne = await upload(client, one.token, bytes, "same.bin");
      const fileTwo = await upload(client, two.token, bytes, "same.bin");
      expect((await one.deliver(fileOne.fileId, one.chats[0]!)).uploadedBytes).toBe(10_000);
      expect((await two.deliver(fileTwo.fileId, two.chats[0]!)).uploadedBytes).toBe(10_000);
      expect(await h.uploadsOf(fileOne.sha256)).toBe(2);
    });
  });
}
