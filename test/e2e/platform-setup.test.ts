import { build } from "esbuild";
import { spawn } from "node:child_process";
import { rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakePlatforms, type FakePlatforms } from "../fixtures/platforms/start-fake-platforms";
import { collectRun, type ShimResult } from "../shim/run-shim";
import { startRelay, type RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";
import { discordKeys } from "../support/webhook-signing";

const runTs = fileURLToPath(new URL("../../scripts/run-ts.mjs", import.meta.url));
const main = fileURLToPath(new URL("../../scripts/platform/main.ts", import.meta.url));
const TELEGRAM_SECRET = "setup-telegram-secret";
const SLACK_SECRET = "setup-slack-signing-secret";
const WHATSAPP_SECRET = "setup-whatsapp-app-secret";
const VERIFY_TOKEN = "setup-whatsapp-verify-token";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** The command bundled once (as run-ts.mjs bundles it for each run), so each run is one `node`. */
const bundled = join(root, `node_modules/.cache/platform-setup-test-${process.pid}/main.mjs`);

/**
 * `npm run platform -- <platform> --relay <url>` as an operator runs it, with `env` set:
 * through scripts/run-ts.mjs as `npm run platform` does, or the bundle built once.
 */
function platform(
  name: string,
  relay: string,
  env: Record<string, string>,
  via: "run-ts" | "bundle" = "bundle",
): Promise<ShimResult> {
  const entry = via === "run-ts" ? [runTs, main] : [bundled];
  const child = spawn(process.execPath, [...entry, name, "--relay", relay, "--no-dev-vars"], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collectRun(child);
}

describe("npm run platform: one command wires each chat platform", () => {
  let fakes: FakePlatforms;
  let relay: RunningRelay;
  let settings: Record<string, Record<string, string>>;

  beforeAll(async () => {
    await build({
      entryPoints: [main],
      outfile: bundled,
      bundle: true,
      platform: "node",
      format: "esm",
      packages: "external",
      logLevel: "warning",
    });
    const discord = await discordKeys();
    fakes = await startFakePlatforms({ discord: { publicKey: discord.publicKeyHex } });
    settings = {
      telegram: {
        TELEGRAM_BOT_TOKEN: fakes.telegram.token,
        TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
        TELEGRAM_API_ROOT: fakes.telegram.url,
      },
      discord: {
        DISCORD_BOT_TOKEN: fakes.discord.token,
        DISCORD_PUBLIC_KEY: discord.publicKeyHex,
        DISCORD_API_BASE: fakes.discord.url,
      },
      slack: {
        SLACK_BOT_TOKEN: fakes.slack.token,
        SLACK_SIGNING_SECRET: SLACK_SECRET,
        SLACK_API_URL: fakes.slack.url,
      },
      whatsapp: {
        WHATSAPP_ACCESS_TOKEN: fakes.whatsapp.token,
        WHATSAPP_PHONE_NUMBER_ID: fakes.whatsapp.phoneNumberId,
        WHATSAPP_APP_SECRET: WHATSAPP_SECRET,
        WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
        WHATSAPP_API_BASE: fakes.whatsapp.url,
      },
    };
    relay = await startRelay({ vars: Object.assign({}, ...Object.values(settings)) });
  });
  afterAll(async () => {
    await relay?.stop();
    await fakes?.stop();
    await rm(dirname(bundled), { recursive: true, force: true });
  });

  it("telegram: setWebhook with the secret and allowed_updates, /airlock in the menu, read back with getWebhookInfo", async () => {
    fakes.telegram.fault({
      method: "getWebhookInfo",
      response: {
        status: 200,
        body: {
          ok: true,
          result: {
            url: `${relay.url}/webhooks/telegram`,
            has_custom_certificate: false,
            pending_update_count: 2,
            last_error_date: 1764150000,
            last_error_message: "Wrong response from the webhook: 502 Bad Gateway",
          },
        },
      },
    });
    const run = await platform("telegram", relay.url, settings.telegram!, "run-ts");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const webhook = `${relay.url}/webhooks/telegram`;
    expect(run.stdout).toContain(`✓ setWebhook: ${webhook} with the secret token`);
    expect(run.stdout).toContain("✓ getWebhookInfo: webhook set, 2 pending update(s)\n");
    expect(run.stdout).toContain(
      "! Telegram's last delivery to a webhook of this bot failed (2025-11-26T09:40:00.000Z): Wrong response from the webhook: 502 Bad Gateway",
    );
    expect(run.stdout).toMatch(/Left to do:\n {2}1\. .*\/airlock/);
    const [set] = fakes.telegram.requests("setWebhook");
    expect(set?.fields).toMatchObject({
      url: webhook,
      secret_token: TELEGRAM_SECRET,
      allowed_updates: JSON.stringify(["message", "channel_post"]),
    });
    expect(
      JSON.parse(fakes.telegram.requests("setMyCommands")[0]?.fields.commands ?? "[]"),
    ).toEqual([{ command: "airlock", description: "Show this chat's Airlock destination id" }]);
  });

  it("telegram: a wrong token, a wrong secret and a relay without Telegram are one line each, exit 1", async () => {
    const before = fakes.telegram.requests("setWebhook").length;
    const wrongToken = await platform("telegram", relay.url, {
      ...settings.telegram!,
      TELEGRAM_BOT_TOKEN: "7000000001:not-the-token",
    });
    expect(wrongToken).toMatchObject({ code: 1, stdout: expect.not.stringContaining("✓") });
    expect(wrongToken.stderr).toBe(
      "airlock platform telegram: Telegram refused TELEGRAM_BOT_TOKEN (getMe: 401 Unauthorized)\n",
    );
    const wrongSecret = await platform("telegram", relay.url, {
      ...settings.telegram!,
      TELEGRAM_WEBHOOK_SECRET: "not-the-relays-secret",
    });
    expect(wrongSecret.code).toBe(1);
    expect(wrongSecret.stderr).toBe(
      "airlock platform telegram: the relay refused the webhook secret: TELEGRAM_WEBHOOK_SECRET differs from the relay's\n",
    );
    const shared = sharedRelay().url;
    const noTelegram = await platform("telegram", shared, settings.telegram!);
    expect(noTelegram.code).toBe(1);
    expect(noTelegram.stderr).toBe(
      `airlock platform telegram: the relay has no Telegram configured (${shared}/webhooks/telegram answers 404): set TELEGRAM_BOT_TOKEN on the relay\n`,
    );
    expect(fakes.telegram.requests("setWebhook")).toHaveLength(before);
  });

  it("discord: checks the public key, registers /send and /airlock, prints the Interactions Endpoint URL", async () => {
    const run = await platform("discord", relay.url, settings.discord!);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("✓ registered slash commands: /send, /airlock\n");
    expect(run.stdout).toContain(
      `Interactions Endpoint URL in the Developer Portal (General Information): ${relay.url}/webhooks/discord`,
    );
    const [put] = fakes.discord.requests("applications.commands.put");
    expect((put?.json as Array<{ name: string }>).map((c) => c.name)).toEqual(["send", "airlock"]);

    const wrongKey = await platform("discord", relay.url, {
      ...settings.discord!,
      DISCORD_PUBLIC_KEY: "cd".repeat(32),
    });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(
      /^airlock platform discord: DISCORD_PUBLIC_KEY is not this application's public key \([0-9a-f]{64}\): the relay would refuse every interaction\n$/,
    );
    const wrongToken = await platform("discord", relay.url, {
      ...settings.discord!,
      DISCORD_BOT_TOKEN: "not-the-token",
    });
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toBe(
      "airlock platform discord: Discord refused DISCORD_BOT_TOKEN (read the application: 401 401: Unauthorized)\n",
    );
    expect(fakes.discord.requests("applications.commands.put")).toHaveLength(1);
  });

  it("slack: prints the app manifest for this relay and checks the token and the signing secret", async () => {
    const run = await platform("slack", relay.url, settings.slack!);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const json = run.stdout.slice(run.stdout.indexOf("\n{") + 1, run.stdout.indexOf("\n}\n") + 2);
    const manifest = JSON.parse(json) as {
      features: { slash_commands: Array<{ command: string; url: string }> };
      oauth_config: { scopes: { bot: string[] } };
      settings: { event_subscriptions: { request_url: string; bot_events: string[] } };
    };
    const url = `${relay.url}/webhooks/slack`;
    expect(manifest.settings.event_subscriptions.request_url).toBe(url);
    expect(manifest.settings.event_subscriptions.bot_events).toContain("message.channels");
    expect(manifest.features.slash_commands).toEqual([
      expect.objectContaining({ command: "/airlock", url }),
    ]);
    expect(manifest.oauth_config.scopes.bot).toEqual(
      expect.arrayContaining(["files:read", "files:write", "chat:write", "commands"]),
    );
    expect(run.stdout).toContain("✓ bot token works: airlock_bot in workspace Airlock Fake\n");
    expect(run.stdout).toContain(`✓ relay answers Slack's signed URL check at ${url}\n`);

    const wrongSecret = await platform("slack", relay.url, {
      ...settings.slack!,
      SLACK_SIGNING_SECRET: "not-the-secret",
    });
    expect(wrongSecret.code).toBe(1);
    expect(wrongSecret.stderr).toBe(
      "airlock platform slack: the relay refused the signature: SLACK_SIGNING_SECRET differs from the relay's\n",
    );
    const wrongToken = await platform("slack", relay.url, {
      ...settings.slack!,
      SLACK_BOT_TOKEN: "xoxb-not-the-token",
    });
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toBe(
      "airlock platform slack: Slack refused SLACK_BOT_TOKEN (auth.test: invalid_auth)\n",
    );
  });

  it("whatsapp: checks the token and phone number, the verify token round trip and the app secret", async () => {
    const run = await platform("whatsapp", relay.url, settings.whatsapp!);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const callback = `${relay.url}/webhooks/whatsapp`;
    expect(run.stdout).toContain(
      `✓ verify token round trip: the relay echoes Meta's challenge at ${callback}\n`,
    );
    expect(run.stdout).toContain("✓ relay takes webhooks signed with the app secret\n");
    expect(run.stdout).toContain("Subscribe to the webhook field: messages.");

    const wrongVerify = await platform("whatsapp", relay.url, {
      ...settings.whatsapp!,
      WHATSAPP_VERIFY_TOKEN: "not-the-token",
    });
    expect(wrongVerify.code).toBe(1);
    expect(wrongVerify.stderr).toBe(
      "airlock platform whatsapp: the relay refused the verify token: WHATSAPP_VERIFY_TOKEN differs from the relay's\n",
    );
    const wrongToken = await platform("whatsapp", relay.url, {
      ...settings.whatsapp!,
      WHATSAPP_ACCESS_TOKEN: "EAA-not-the-token",
    });
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toBe(
      "airlock platform whatsapp: Meta refused WHATSAPP_ACCESS_TOKEN (Invalid OAuth access token - Cannot parse access token)\n",
    );
  });
});
