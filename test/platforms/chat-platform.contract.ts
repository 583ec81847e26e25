import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { InboxRecord } from "../../src/services/inbox/inbox";
import type { DeliveryRecord } from "../../src/wire-types";
import { randomBytes, sha256Hex, TINY_PNG } from "../support/bytes";
import { errorOf, RelayClient } from "../support/relay-client";
import {
  complete,
  declare,
  describe as describeBytes,
  putBytes,
  type UploadAnswer,
} from "../support/send";
import { fakes, type ChatPlatformHarness } from "./contract/harness";

/** A name a person might send: path parts, a bidi override. The one name rule leaves `evil.csv`. */
const HOSTILE_NAME = "..\\..\\evil\u202E.csv";

/** A content type no other test declares (WhatsApp's media upload is told apart by it alone). */
const uniqueType = () => `application/x-contract-${crypto.randomUUID()}`;

/**
 * The behaviour every chat platform adapter must have, driven through the real relay (routes,
 * delivery service, the platform's client library) against the platform's fake server: native
 * sends by sniffed type with the platform's message id, the size tier's link fallback, 429 and
 * `retry_after`, refusals mapped to the relay's codes, inbound attachments fetched byte-exact
 * with clean names, and webhook proofs.
 */
export function chatPlatformContract<Ref>(h: ChatPlatformHarness<Ref>): void {
  describe.concurrent(`chat platform contract: ${h.name}`, () => {
    const relay = (extra: Record<string, string> = {}) =>
      new RelayClient(fakes.env(env, { ...h.env, ...extra }));
    const client = relay();

    /** A session bound to `count` fresh chats of the platform. */
    async function session(on = client, count = 1) {
      const chats = Array.from({ length: count }, () => h.newChat());
      const chat = chats[0]!;
      const { token } = await on.mintSession({ destinations: chats.map((c) => `${h.name}:${c}`) });
      /** Uploads `bytes`, declared as a content type only this test uses. */
      const upload = async (bytes: Uint8Array, name: string, contentType = uniqueType()) => {
        const { declared, stored } = await describeBytes(bytes, name);
        const answer = (await (
          await declare(on, token, { ...declared, contentType })
        ).json()) as UploadAnswer;
        if (answer.status !== "upload") throw new Error(`unexpected answer ${answer.status}`);
        expect((await putBytes(on, answer.put, stored)).ok).toBe(true);
        const done = await complete(on, token, answer.uploadId);
        expect(done.status).toBe(201);
        const { fileId } = (await done.json()) as { fileId: string };
        return { name, contentType, fileId, sha256: declared.sha256 };
      };
      const deliver = (fileId: string, to = chat, caption?: string) =>
        on.call("POST", `/v1/files/${fileId}/deliveries`, {
          token,
          json: caption ? { to: `${h.name}:${to}`, caption } : { to: `${h.name}:${to}` },
        });
      const deliveries = async (fileId: string) =>
        (
          (await (await on.call("GET", `/v1/files/${fileId}/deliveries`, { token })).json()) as {
            deliveries: DeliveryRecord[];
          }
        ).deliveries;
      const inbox = async () =>
        (
          (await (await on.call("GET", "/v1/inbox", { token })).json()) as {
            items: InboxRecord[];
          }
        ).items;
      return { chat, chats, token, upload, deliver, deliveries, inbox };
    }

    it("sends by sniffed type up to the tier's limit, with the platform's message id, and a link beyond", async () => {
      const { chat, upload, deliver } = await session(relay({ [h.documentLimit]: "3000" }));
      const png = await upload(TINY_PNG, "chart.png");
      const photo = (await (await deliver(png.fileId, chat, "The chart")).json()) as DeliveryRecord;
      expect(photo).toMatchObject({
        mode: "native",
        method: h.methods.photo,
        status: "delivered",
        uploadedBytes: TINY_PNG.byteLength,
      });
      expect(photo.messageId).toMatch(h.messageId);
      expect(await h.filesSentTo(chat, png.sha256)).toEqual([
        { name: "chart.png", size: TINY_PNG.byteLength, sha256: png.sha256, caption: "The chart" },
      ]);

      // Bytes of no media type go as a document whatever the name says; at the limit, natively.
      const plain = await upload(randomBytes(3000), "looks-like.jpg");
      const document = (await (await deliver(plain.fileId)).json()) as DeliveryRecord;
      expect(document).toMatchObject({ mode: "native", method: h.methods.document });
      expect(document.messageId).toMatch(h.messageId);
      expect(await h.filesSentTo(chat, plain.sha256)).toEqual([
        { name: "looks-like.jpg", size: 3000, sha256: plain.sha256, caption: undefined },
      ]);

      const over = await upload(randomBytes(3001), "over.bin");
      const link = (await (await deliver(over.fileId, chat, "Results")).json()) as DeliveryRecord;
      expect(link).toMatchObject({ mode: "link", method: h.methods.link, uploadedBytes: 0 });
      expect(link.messageId).toMatch(h.messageId);
      expect(await h.filesSentTo(chat, over.sha256)).toEqual([]);
      const [text, ...more] = await h.textsTo(chat);
      expect(more).toEqual([]);
      expect(text).toContain("Results");
      expect(text).toContain("over.bin (2.9 KiB)");
      expect(text).toMatch(/http:\/\/relay\.test\/d\/fil_/);
      expect(text).toMatch(/Link expires \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    });

    it("retries a 429 after the platform's retry_after, and posts once", async () => {
      const { chat, upload, deliver } = await session();
      const file = await upload(randomBytes(2000), "r.bin");
      await h.faultSend(chat, file, "rateLimited", 1);
      expect(await (await deliver(file.fileId)).json()).toMatchObject({ status: "delivered" });
      const attempts = await h.sendAttempts(chat);
      expect(attempts.map((a) => a.fault)).toEqual([true, false]);
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1000);
      expect(await h.filesSentTo(chat, file.sha256)).toHaveLength(1);
    });

    it("answers 502 delivery_failed with the platform's reason, at once, for a refusal, too large or too long a wait", async () => {
      const { chats, upload, deliver, deliveries } = await session(client, 3);
      const file = await upload(randomBytes(2500), `refused-${crypto.randomUUID()}.bin`);
      const [later, refused, tooLarge] = chats as [string, string, string];
      // A retry_after longer than the relay waits is final: one attempt.
      await h.faultSend(later, file, "rateLimited", 3600);
      expect(await errorOf(await deliver(file.fileId, later))).toMatchObject({
        status: 502,
        code: "delivery_failed",
      });
      expect((await h.sendAttempts(later)).map((a) => a.fault)).toEqual([true]);
      for (const [chat, fault] of [
        [refused, "refused"],
        [tooLarge, "tooLarge"],
      ] as const) {
        await h.faultSend(chat, file, fault);
        const error = await errorOf(await deliver(file.fileId, chat));
        expect(error).toMatchObject({ status: 502, code: "delivery_failed" });
        expect(error.message).toContain(h.reasons[fault]);
      }
      const recorded = await deliveries(file.fileId);
      expect(recorded).toHaveLength(3);
      for (const delivery of recorded)
        expect(delivery).toMatchObject({ status: "failed", messageId: null });
      expect(recorded.map((d) => d.error).join("\n")).toContain(h.reasons.tooLarge);
      for (const chat of chats) expect(await h.filesSentTo(chat, file.sha256)).toEqual([]);
    });

    it("fetches a person's attachment into the bound session's inbox: exact bytes, clean name", async () => {
      const { chat, token, inbox } = await session();
      const bytes = randomBytes(20_000);
      const ref = await h.addAttachment("plain.csv", bytes);
      const { body, headers } = await h.webhook(chat, ref, HOSTILE_NAME);
      expect((await client.call("POST", `/webhooks/${h.name}`, { body, headers })).status).toBe(
        200,
      );
      const [item, ...more] = await inbox();
      expect(more).toEqual([]);
      expect(item).toMatchObject({ name: "evil.csv", size: 20_000, source: `${h.name}:${chat}` });
      const content = await client.call("GET", `/v1/files/${item!.file.fileId}/content`, { token });
      expect(await sha256Hex(await content.arrayBuffer())).toBe(await sha256Hex(bytes));
      const downloads = await h.downloadsOf(ref);
      expect(downloads).toHaveLength(1);
      if (h.downloadAuth)
        expect(downloads[0]?.authorization).toMatchObject({ scheme: h.downloadAuth, valid: true });
    });

    it("refuses a webhook whose proof is wrong, missing or for another body with 401, storing nothing", async () => {
      const { chat, inbox } = await session();
      const ref = await h.addAttachment("x.csv", randomBytes(100));
      const signed = await h.webhook(chat, ref, "x.csv");
      for (const forged of await h.forgeries(signed)) {
        const answer = await client.call("POST", `/webhooks/${h.name}`, forged);
        expect(await errorOf(answer)).toEqual({
          status: 401,
          code: "webhook_unauthorized",
          message: "webhook signature is missing or invalid",
        });
      }
      expect(await inbox()).toEqual([]);
      expect(await h.downloadsOf(ref)).toEqual([]);
      // The same webhook with its proof is taken: only the proof differed.
      expect((await client.call("POST", `/webhooks/${h.name}`, signed)).status).toBe(200);
      expect((await inbox()).map((i) => i.name)).toEqual(["x.csv"]);
    });
  });
}
