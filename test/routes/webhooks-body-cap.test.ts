import { beforeAll, describe, expect, it } from "vitest";
import { errorOf, type RelayClient } from "../support/relay-client";
import { nowSeconds, slackSignature } from "../support/webhook-signing";
import { inboxCount, SLACK_SECRET, webhookClient } from "./webhooks-harness";

let client: RelayClient;

beforeAll(async () => {
  ({ client } = await webhookClient());
});

/** A request body that never ends, counting the bytes the relay pulled from it. */
function endlessBody(chunkBytes = 64 * 1024): {
  stream: ReadableStream<Uint8Array>;
  pulled(): number;
} {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled += chunkBytes;
      controller.enqueue(new Uint8Array(chunkBytes).fill(0x20));
    },
  });
  return { stream, pulled: () => pulled };
}

/** A body that sends one small piece and then stalls: only a relay that reads it would wait. */
function stalledBody(): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent) return new Promise(() => {});
      sent = true;
      controller.enqueue(new TextEncoder().encode('{"update_id":'));
    },
  });
}

describe("webhook bodies are capped before they are read", () => {
  const slackHeaders = async () => ({
    "x-slack-request-timestamp": nowSeconds(),
    "x-slack-signature": await slackSignature(SLACK_SECRET, nowSeconds(), "{}"),
    "content-type": "application/json",
  });

  it.each([
    ["telegram", { "x-telegram-bot-api-secret-token": "telegram-webhook-secret" }],
    ["slack", null],
    ["discord", null],
  ] as const)(
    "answers a %s webhook declaring 50 MB with 413 at once, without reading the body",
    async (platform, given) => {
      const headers =
        given ??
        (platform === "slack"
          ? await slackHeaders()
          : {
              "x-signature-ed25519": "00".repeat(64),
              "x-signature-timestamp": nowSeconds(),
            });
      const before = await inboxCount();
      const response = await client.call("POST", `/webhooks/${platform}`, {
        body: stalledBody(),
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(50 * 1024 * 1024),
        },
      });
      expect(await errorOf(response)).toEqual({
        status: 413,
        code: "payload_too_large",
        message: "request body is larger than 1048576 bytes",
      });
      expect(await inboxCount()).toBe(before);
    },
  );

  it("stops reading a chunked webhook body at 1 MiB and answers 413", async () => {
    const body = endlessBody();
    const response = await client.call("POST", "/webhooks/slack", {
      body: body.stream,
      headers: await slackHeaders(),
    });
    expect(await errorOf(response)).toMatchObject({ status: 413, code: "payload_too_large" });
    expect(body.pulled()).toBeLessThan(2 * 1024 * 1024);
  });

  it("refuses a forged Telegram webhook with 401 before reading its huge body", async () => {
    const body = endlessBody();
    const before = await inboxCount();
    const response = await client.call("POST", "/webhooks/telegram", {
      body: body.stream,
      headers: { "x-telegram-bot-api-secret-token": "guess", "content-type": "application/json" },
    });
    expect(await errorOf(response)).toMatchObject({ status: 401, code: "webhook_unauthorized" });
    expect(body.pulled()).toBeLessThanOrEqual(2 * 64 * 1024);
    expect(await inboxCount()).toBe(before);
  });
});
