import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { randomBytes, sha256Hex } from "../support/bytes";
import { uniqueChatId } from "../support/platform-fakes";
import {
  contentOf,
  discordCommand,
  discordInteraction,
  fakes,
  inboxOf,
  sessionFor,
  slackEvent,
} from "./inbox-harness";

/** Files sent with the Discord command and shared in Slack, into the bound session's inbox. */
describe("receiving from Discord", () => {
  it("never fetches from a host outside the platform's allow-list", async () => {
    const channel = uniqueChatId();
    const { token } = await sessionFor(`discord:${channel}`);
    const evil = {
      id: "5",
      filename: "evil.bin",
      size: 10,
      url: "http://169.254.169.254/latest/meta-data",
    };
    await discordInteraction(discordCommand(channel, evil));
    expect(await inboxOf(token)).toEqual([]);
    const row = await env.DB.prepare("SELECT status, error, attempts FROM inbox WHERE source = ?")
      .bind(`discord:${channel}`)
      .first<{ status: string; error: string; attempts: number }>();
    expect(row?.status).toBe("failed");
    expect(row?.error).toContain("not one of the platform's hosts");
    // A refusal is final: no retries now, nor when the sandbox polls again.
    expect(row?.attempts).toBe(5);
    await inboxOf(token);
    const after = await env.DB.prepare("SELECT attempts FROM inbox WHERE source = ?")
      .bind(`discord:${channel}`)
      .first<{ attempts: number }>();
    expect(after?.attempts).toBe(5);
  });
});

describe("receiving from Slack", () => {
  type SlackRef = {
    id: string;
    name: string;
    size: number;
    url_private: string;
    url_private_download: string;
  };

  it("looks up a file_shared event's file with files.info", async () => {
    const channel = `C${uniqueChatId()}`;
    const { token } = await sessionFor(`slack:${channel}`);
    const bytes = randomBytes(999);
    const ref = await fakes.addFile<SlackRef>("slack", "shared.bin", bytes);
    await slackEvent({
      type: "event_callback",
      event_id: `Ev${uniqueChatId()}`,
      event: { type: "file_shared", channel_id: channel, file_id: ref.id },
    });
    const [item] = await inboxOf(token);
    expect(item?.size).toBe(999);
    expect(await contentOf(token, item!)).toBe(await sha256Hex(bytes));
  });

  it("takes a file once when Slack sends its share as both a message and a file_shared event", async () => {
    const channel = `C${uniqueChatId()}`;
    const { token } = await sessionFor(`slack:${channel}`);
    const bytes = randomBytes(700);
    const ref = await fakes.addFile<SlackRef>("slack", "once.bin", bytes);
    const share = async (event: object) =>
      (await slackEvent({ type: "event_callback", event_id: `Ev${uniqueChatId()}`, event })).status;
    expect(await share({ type: "message", subtype: "file_share", channel, files: [ref] })).toBe(
      200,
    );
    expect(await share({ type: "file_shared", channel_id: channel, file_id: ref.id })).toBe(200);
    const items = await inboxOf(token);
    expect(items.map((item) => item.name)).toEqual(["once.bin"]);
    expect(await contentOf(token, items[0]!)).toBe(await sha256Hex(bytes));
  });

  it("takes no file_shared event for a file the relay's own bot shared (a delivery)", async () => {
    const channel = `C${uniqueChatId()}`;
    const { token } = await sessionFor(`slack:${channel}`);
    const ref = await fakes.addFile<SlackRef>("slack", "delivered.bin", randomBytes(500));
    const infoCalls = async () =>
      (await fakes.requests("slack", "files.info")).filter((r) =>
        JSON.stringify(r).includes(ref.id),
      );
    const response = await slackEvent({
      type: "event_callback",
      event_id: `Ev${uniqueChatId()}`,
      // Slack names the app's bot user among the event's authorizations; a file_shared
      // event carries no bot_id, only the sharing user's id.
      authorizations: [{ team_id: "T1", user_id: "UAIRLOCKBOT", is_bot: true }],
      event: { type: "file_shared", channel_id: channel, file_id: ref.id, user_id: "UAIRLOCKBOT" },
    });
    expect(response.status).toBe(200);
    expect(await inboxOf(token)).toEqual([]);
    expect(await infoCalls()).toEqual([]);
  });
});
