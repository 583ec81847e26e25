import { DISCORD_COMMANDS } from "../../src/platforms/discord-commands";
import { callRelay, relayRefusal, SetupError, type Report, type Settings } from "./setup";

/** View Channel, Send Messages and Attach Files: what deliveries need in a channel. */
const BOT_PERMISSIONS = 1024 + 2048 + 32768;

interface Application {
  id: string;
  name: string;
  verify_key: string;
}

/**
 * Discord: reads the bot's application (token check; its public key must be the relay's
 * `DISCORD_PUBLIC_KEY`), checks the relay answers its interactions path, registers the slash
 * commands (`/send`, `/airlock`) and prints the Interactions Endpoint URL to paste.
 */
export async function setUpDiscord(
  relay: string,
  settings: Settings,
  report: Report,
): Promise<void> {
  const token = settings.need("DISCORD_BOT_TOKEN", "the bot's token from the Developer Portal");
  const publicKey = settings.need(
    "DISCORD_PUBLIC_KEY",
    "the application's public key, General Information",
  );
  const apiBase = (settings.get("DISCORD_API_BASE") ?? "https://discord.com/api/v10").replace(
    /\/+$/,
    "",
  );
  const discord = async <T>(what: string, path: string, init: RequestInit = {}): Promise<T> => {
    let answer: Response;
    try {
      answer = await fetch(`${apiBase}${path}`, {
        ...init,
        headers: {
          authorization: `Bot ${token}`,
          ...(init.body ? { "content-type": "application/json" } : {}),
        },
      });
    } catch (error) {
      throw new SetupError(`could not reach Discord at ${apiBase} (${what}): ${String(error)}`);
    }
    const body = (await answer.json().catch(() => ({}))) as { message?: string };
    if (answer.status === 401)
      throw new SetupError(
        `Discord refused DISCORD_BOT_TOKEN (${what}: 401 ${body.message ?? ""})`.trim(),
      );
    if (!answer.ok)
      throw new SetupError(
        `Discord refused ${what}: ${answer.status} ${body.message ?? JSON.stringify(body)}`,
      );
    return body as T;
  };

  const app = await discord<Application>("read the application", "/applications/@me");
  report.done(`bot token works: application "${app.name}" (id ${app.id})`);
  if (app.verify_key.toLowerCase() !== publicKey.toLowerCase())
    throw new SetupError(
      `DISCORD_PUBLIC_KEY is not this application's public key (${app.verify_key}): the relay would refuse every interaction`,
    );
  report.done("DISCORD_PUBLIC_KEY is the application's public key");

  const endpoint = `${relay}/webhooks/discord`;
  // Unsigned: a relay with Discord configured refuses it (401); one without answers 404.
  const probe = await callRelay(endpoint, { method: "POST", body: "{}" });
  if (probe.status !== 401)
    throw relayRefusal("Discord", endpoint, probe.status, "DISCORD_BOT_TOKEN");
  report.done(`relay verifies interactions at ${endpoint}`);

  const registered = await discord<Array<{ name: string; id: string }>>(
    "the slash commands",
    `/applications/${app.id}/commands`,
    { method: "PUT", body: JSON.stringify(DISCORD_COMMANDS) },
  );
  report.done(`registered slash commands: ${registered.map((c) => `/${c.name}`).join(", ")}`);

  report.leave(
    `Paste the Interactions Endpoint URL in the Developer Portal (General Information): ${endpoint} — Discord checks it with a signed PING, which the relay answers.`,
  );
  report.leave(
    `Invite the bot: https://discord.com/oauth2/authorize?client_id=${app.id}&scope=bot+applications.commands&permissions=${BOT_PERMISSIONS}`,
  );
  report.leave(
    'Type /airlock in a channel for its destination id; bind sessions to it: POST /v1/sessions {"destinations":["discord:<id>"]}.',
  );
}
