import { hmacSha256Hex } from "../../src/auth/hmac";
import { ErrorCode, WebClient, type WebAPICallError } from "@slack/web-api";
import { callRelay, relayRefusal, SetupError, type Report, type Settings } from "./setup";

/** What the relay needs of a Slack app: read attachments, post files and messages, `/airlock`. */
const BOT_SCOPES = [
  "channels:history",
  "groups:history",
  "im:history",
  "files:read",
  "files:write",
  "chat:write",
  "commands",
];
const BOT_EVENTS = ["message.channels", "message.groups", "message.im", "file_shared"];

/** The app manifest for "Create an app → From a manifest", pointed at this relay. */
export function slackManifest(relay: string): object {
  const url = `${relay}/webhooks/slack`;
  return {
    display_information: { name: "Airlock", description: "Files between people and AI agents" },
    features: {
      bot_user: { display_name: "Airlock", always_online: true },
      slash_commands: [
        {
          command: "/airlock",
          url,
          description: "Show this channel's Airlock destination id",
          should_escape: false,
        },
      ],
    },
    oauth_config: { scopes: { bot: BOT_SCOPES } },
    settings: {
      event_subscriptions: { request_url: url, bot_events: BOT_EVENTS },
      org_deploy_enabled: false,
      socket_mode_enabled: false,
      token_rotation_enabled: false,
    },
  };
}

/**
 * Slack: prints the app manifest; with the app's settings at hand, also checks the bot token
 * (`auth.test`) and that the relay answers Slack's URL check signed with the signing secret.
 */
export async function setUpSlack(relay: string, settings: Settings, report: Report): Promise<void> {
  report.done("app manifest (paste it at api.slack.com/apps → Create New App → From a manifest):");
  report.block(JSON.stringify(slackManifest(relay), null, 2));

  const token = settings.get("SLACK_BOT_TOKEN");
  if (token) {
    const client = new WebClient(token, {
      slackApiUrl: settings.get("SLACK_API_URL") ?? "https://slack.com/api/",
      retryConfig: { retries: 0 },
    });
    try {
      const auth = await client.auth.test();
      report.done(
        `bot token works: ${auth.user ?? "bot"} in workspace ${auth.team ?? auth.team_id ?? "?"}`,
      );
    } catch (error) {
      const e = error as WebAPICallError;
      if (e.code === ErrorCode.PlatformError)
        throw new SetupError(`Slack refused SLACK_BOT_TOKEN (auth.test: ${e.data.error})`);
      throw new SetupError(`could not reach Slack (auth.test): ${e.message}`);
    }
  } else
    report.leave(
      "Install the app to the workspace; set SLACK_BOT_TOKEN (Bot User OAuth Token) on the relay and here.",
    );

  const secret = settings.get("SLACK_SIGNING_SECRET");
  const url = `${relay}/webhooks/slack`;
  if (secret) {
    const challenge = crypto.randomUUID();
    const body = JSON.stringify({ type: "url_verification", challenge, token: "setup" });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const answer = await callRelay(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": `v0=${await hmacSha256Hex(secret, `v0:${timestamp}:${body}`)}`,
      },
      body,
    });
    if (answer.status === 401)
      throw new SetupError(
        "the relay refused the signature: SLACK_SIGNING_SECRET differs from the relay's",
      );
    if (!answer.ok) throw relayRefusal("Slack", url, answer.status, "SLACK_BOT_TOKEN");
    const echoed = ((await answer.json()) as { challenge?: string }).challenge;
    if (echoed !== challenge)
      throw new SetupError(`the relay did not echo Slack's URL check at ${url}`);
    report.done(`relay answers Slack's signed URL check at ${url}`);
  } else
    report.leave(
      "Set SLACK_SIGNING_SECRET (Basic Information → Signing Secret) on the relay and here, and run this again.",
    );
  report.leave(
    "Invite the bot to a channel (/invite @Airlock) and type /airlock there for the channel's destination id.",
  );
}
