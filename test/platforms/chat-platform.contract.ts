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

    async function session(on = client) {
      const chat = h.newChat();
      const to = `${h.name}:${chat}`;
      const { token } = await on.mintSession({ destinations: [to] });
      /** Uploads `bytes` (declared as a content type only this test uses) and delivers them to the chat. */
      const send = async (
        bytes: Uint8Array,
        name: string,
        { caption, contentType = uniqueType() }: { caption?: string; contentType?: string } = {},
      ) => {
        const { declared, stored } = await describeBytes(bytes, name);
        const answer = (await (
          await declare(on, token, { ...declared, contentType })
        ).json()) as UploadAnswer;
        if (answer.status !== "upload") throw new Error(`unexpected answer ${answer.status}`);
        expect((await putBytes(on, answer.put, stored)).ok).toBe(true);
        const done = await complete(on, token, answer.uploadId);
        expect(done.status).toBe(201);
        const { fileId } = (await done.json()) as { fileId: string };
        const file = { name, contentType, fileId, sha256: declared.sha256 };
        const response = await on.call("POST", `/v1/files/${fileId}/deliveries`, {
          token,
          json: caption ? { to, caption } : { to },
        });
        return { response, file };
      };
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
      return { chat, token, send, deliveries, inbox };
    }

    it("sends a photo with its sniffed type's method: exact bytes, name, caption, message id", async () => {
      const { chat, send } = await session();
      const { response } = await send(TINY_PNG, "chart.png", { caption: "The chart" });
      expect(response.status).toBe(201);
      const record = (await response.json()) as DeliveryRecord;
      expect(record).toMatchObject({
        mode: "native",
        method: h.methods.photo,
        status: "delivered",
        uploadedBytes: TINY_PNG.byteLength,
      });
      expect(record.messageId).toMatch(h.messageId);
      expect(await h.filesSentTo(chat, await sha256Hex(TINY_PNG))).toEqual([
        {
          name: "chart.png",
          size: TINY_PNG.byteLength,
          sha256: await sha256Hex(TINY_PNG),
          caption: "The chart",
        },
      ]);
    });

    it("sends bytes of no media type as a document, whatever the name says", async () => {
      const { chat, send } = await session();
      const bytes = randomBytes(3000);
      const { response, file } = await send(bytes, "looks-like.jpg");
      const record = (await response.json()) as DeliveryRecord;
      expect(record).toMatchObject({ mode: "native", method: h.methods.document });
      expect(record.messageId).toMatch(h.messageId);
      expect(await h.filesSentTo(chat, file.sha256)).toEqual([
        { name: "looks-like.jpg", size: 3000, sha256: file.sha256, caption: undefined },
      ]);
    });

    it("uploads a file at its tier's limit, and one a byte over as a link with name, size and expiry", async () => {
      const { chat, send } = await session(relay({ [h.documentLimit]: "3000" }));
      const at = await send(randomBytes(3000), "at-limit.bin");
      expect(await at.response.json()).toMatchObject({
        mode: "native",
        method: h.methods.document,
      });
      const over = await send(randomBytes(3001), "over.bin", { caption: "Results" });
      const record = (await over.response.json()) as DeliveryRecord;
      expect(record).toMatchObject({ mode: "link", method: h.methods.link, uploadedBytes: 0 });
      expect(record.messageId).toMatch(h.messageId);
      expect(await h.filesSentTo(chat, at.file.sha256)).toHaveLength(1);
      expect(await h.filesSentTo(chat, over.file.sha256)).toEqual([]);
      const [text, ...more] = await h.textsTo(chat);
      expect(more).toEqual([]);
      expect(text).toContain("Results");
      expect(text).toContain("over.bin (3.0 KB)");
      expect(text).toMatch(/http:\/\/relay\.test\/d\/fil_/);
      expect(text).toMatch(/Link expires \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    });

    it("retries a 429 after the platform's retry_after, and posts once", async () => {
      const { chat, send } = await session();
      await h.faultSend(chat, { name: "r.bin", contentType: "" }, "rateLimited", 1);
      const { response, file } = await send(randomBytes(2000), "r.bin");
      expect(await response.json()).toMatchObject({ status: "delivered" });
      const attempts = await h.sendAttempts(chat);
      expect(attempts.map((a) => a.fault)).toEqual([true, false]);
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1000);
      expect(await h.filesSentTo(chat, file.sha256)).toHaveLength(1);
    });

    it("gives up at once on a retry_after longer than the relay waits: 502 delivery_failed", async () => {
      const { chat, send } = await session();
      await h.faultSend(chat, { name: "later.bin", contentType: "" }, "rateLimited", 3600);
      const { response, file } = await send(randomBytes(2000), "later.bin");
      expect(await errorOf(response)).toMatchObject({ status: 502, code: "delivery_failed" });
      expect((await h.sendAttempts(chat)).map((a) => a.fault)).toEqual([true]);
      expect(await h.filesSentTo(chat, file.sha256)).toEqual([]);
    });

    it.each(["refused", "tooLarge"] as const)(
      "maps the platform's %s answer to 502 delivery_failed with its reason, recorded failed",
      async (fault) => {
        const { chat, send, deliveries } = await session();
        const name = `${fault}-${crypto.randomUUID()}.bin`;
        const bytes = randomBytes(2500);
        const contentType = uniqueType();
        await h.faultSend(chat, { name, contentType }, fault);
        const { response, file } = await send(bytes, name, { contentType });
        const refused = await errorOf(response);
        expect(refused).toMatchObject({ status: 502, code: "delivery_failed" });
        expect(refused.message).toContain(h.reasons[fault]);
        expect(await deliveries(file.fileId)).toMatchObject([
          { status: "failed", messageId: null, error: expect.stringContaining(h.reasons[fault]) },
        ]);
        expect(await h.filesSentTo(chat, file.sha256)).toEqual([]);
      },
    );

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
