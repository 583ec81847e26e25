import { waitForEvents } from "../support/relay-log";
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakePlatforms, type FakePlatforms } from "../fixtures/platforms/start-fake-platforms";
import { whatsappSignature, whatsappWebhook } from "../fixtures/platforms/whatsapp-fake";
import { startRelay, type RunningRelay } from "../support/relay";

/**
 * WhatsApp's doors as a stranger would push on them, against `wrangler dev` and the fake
 * Graph API: the webhook signature, the subscription handshake, and where media is fetched from.
 */
const APP_SECRET = "security-whatsapp-app-secret";
const VERIFY_TOKEN = "security-whatsapp-verify-token";
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

interface InboxItem {
  name: string;
  sha256: string;
  source: string;
}

describe("WhatsApp webhooks and media", () => {
  let fakes: FakePlatforms;
  let relay: RunningRelay;
  /** A relay whose media allow-list names a host the fake's URLs do not point at. */
  let strictRelay: RunningRelay;
  /** A server that records whoever sends it a bearer token. */
  let trap: http.Server;
  let trapped: string[] = [];
  let messageSeq = 0;

  beforeAll(async () => {
    fakes = await startFakePlatforms();
    trap = http.createServer((req, res) => {
      trapped.push(req.headers.authorization ?? "");
      res.writeHead(200, { "content-length": "3" }).end("bad");
    });
    await new Promise<void>((resolve) => trap.listen(0, "127.0.0.1", resolve));
    const vars = {
      WHATSAPP_ACCESS_TOKEN: fakes.whatsapp.token,
      WHATSAPP_PHONE_NUMBER_ID: fakes.whatsapp.phoneNumberId,
      WHATSAPP_APP_SECRET: APP_SECRET,
      WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
      WHATSAPP_API_BASE: fakes.whatsapp.url,
    };
    [relay, strictRelay] = await Promise.all([
      startRelay({ vars: { ...vars, WHATSAPP_MEDIA_HOSTS: new URL(fakes.whatsapp.url).host } }),
      startRelay({
        vars: {
          ...vars,
          WHATSAPP_MEDIA_HOSTS: `127.0.0.1:${(trap.address() as AddressInfo).port}`,
        },
      }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([relay?.stop(), strictRelay?.stop()]);
    await fakes?.stop();
    await new Promise((resolve) => trap?.close(resolve));
  });

  async function inboxOf(on: RunningRelay, token: string, expected: number): Promise<InboxItem[]> {
    for (let i = 0; ; i++) {
      const response = await fetch(`${on.url}/v1/inbox`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const { items } = (await response.json()) as { items: InboxItem[] };
      if (items.length >= expected || i >= 40) return items;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  function post(on: RunningRelay, body: string, headers: Record<string, string>) {
    return fetch(`${on.url}/webhooks/whatsapp`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
  }

  async function documentFrom(waId: string, bytes: Uint8Array, filename: string) {
    const ref = fakes.whatsapp.addFile({ name: filename, data: bytes });
    return JSON.stringify(
      whatsappWebhook({
        phoneNumberId: fakes.whatsapp.phoneNumberId,
        from: waId,
        messageId: `wamid.security${++messageSeq}`,
        type: "document",
        ref,
        filename,
      }),
    );
  }

  it("refuses a forged, missing or altered signature with 401 and stores nothing", async () => {
    fakes.reset();
    const waId = "15557770001";
    const session = await relay.mintSession({ destinations: [`whatsapp:${waId}`] });
    const body = await documentFrom(waId, randomBytes(1000), "forged.bin");
    const altered = body.replace("forged.bin", "other.bin");
    const attempts: [string, Record<string, string>][] = [
      ["body", {}],
      ["body", { "x-hub-signature-256": whatsappSignature("not-the-secret", body) }],
      ["altered", { "x-hub-signature-256": whatsappSignature(APP_SECRET, body) }],
      ["body", { "x-hub-signature-256": whatsappSignature(APP_SECRET, body).slice(7) }],
      ["body", { "x-hub-signature-256": "sha256=" }],
    ];
    for (const [which, headers] of attempts) {
      const response = await post(relay, which === "body" ? body : altered, headers);
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
        "webhook_unauthorized",
      );
    }
    expect(fakes.whatsapp.requests("media.get")).toEqual([]);
    expect(await inboxOf(relay, session.token, 0)).toEqual([]);

    // The same body, signed: taken.
    const signed = await post(relay, body, {
      "x-hub-signature-256": whatsappSignature(APP_SECRET, body),
    });
    expect(signed.status).toBe(200);
    expect(await inboxOf(relay, session.token, 1)).toMatchObject([{ name: "forged.bin" }]);
  });

  it("answers the subscription handshake only for the verify token", async () => {
    const ok = await fetch(
      `${relay.url}/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=987654`,
    );
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe("987654");
    const bad = await fetch(
      `${relay.url}/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=guess&hub.challenge=1`,
    );
    expect(bad.status).toBe(403);
  });

  it("stores a person's media byte-exact, once per message id", async () => {
    const waId = "15557770002";
    const session = await relay.mintSession({ destinations: [`whatsapp:${waId}`] });
    const bytes = randomBytes(150_000);
    const body = await documentFrom(waId, bytes, "notes.txt");
    const headers = { "x-hub-signature-256": whatsappSignature(APP_SECRET, body) };
    expect((await post(relay, body, headers)).status).toBe(200);
    expect((await post(relay, body, headers)).status).toBe(200);
    const items = await inboxOf(relay, session.token, 1);
    expect(items).toMatchObject([{ name: "notes.txt", source: `whatsapp:${waId}` }]);
    expect(items[0]?.sha256).toBe(sha256(bytes));
    // The second delivery of the message was recognised as the first one's.
    await waitForEvents(relay, "attachment_duplicate", { chat: `whatsapp:${waId}` });
    expect(await inboxOf(relay, session.token, 0)).toHaveLength(1);
  });

  it("never sends the access token to a host off the media allow-list", async () => {
    trapped = [];
    fakes.reset();
    const waId = "15557770003";
    const session = await strictRelay.mintSession({ destinations: [`whatsapp:${waId}`] });
    const body = await documentFrom(waId, randomBytes(500), "elsewhere.bin");
    const response = await post(strictRelay, body, {
      "x-hub-signature-256": whatsappSignature(APP_SECRET, body),
    });
    expect(response.status).toBe(200);
    // The media URL points at the fake's own host, which this relay does not allow.
    // The fetch ran and failed, for good: the host is not on the list.
    await waitForEvents(strictRelay, "attachment_fetch_failed", { chat: `whatsapp:${waId}` });
    expect(fakes.whatsapp.requests("download")).toEqual([]);
    expect(trapped).toEqual([]);
    expect(await inboxOf(strictRelay, session.token, 0)).toEqual([]);
  });
});
