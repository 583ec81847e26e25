import { inject } from "vitest";
import type { FaultSpec, RecordedRequestJson } from "../fixtures/platforms/recorder";
import type { Bindings } from "../../src/env";

type Name = "telegram" | "discord" | "slack" | "whatsapp";

/** Talks to the fake platform servers (started by the global setup) over their control API. */
export class PlatformFakes {
  readonly urls = inject("platforms");

  origin(name: Name): string {
    return new URL(this.urls[name]).origin;
  }

  /** The relay's environment pointed at the fakes, attachments allowed from their hosts. */
  env(base: Bindings, overrides: Partial<Bindings> = {}): Bindings {
    return {
      ...base,
      TELEGRAM_BOT_TOKEN: this.urls.tokens.telegram,
      TELEGRAM_WEBHOOK_SECRET: "telegram-webhook-secret",
      TELEGRAM_API_ROOT: this.urls.telegram,
      DISCORD_BOT_TOKEN: this.urls.tokens.discord,
      DISCORD_API_BASE: this.urls.discord,
      DISCORD_ATTACHMENT_HOSTS: new URL(this.urls.discord).host,
      SLACK_BOT_TOKEN: this.urls.tokens.slack,
      SLACK_API_URL: this.urls.slack,
      SLACK_FILE_HOSTS: new URL(this.urls.slack).host,
      ...overrides,
    };
  }

  async requests(name: Name, api?: string): Promise<RecordedRequestJson[]> {
    const query = api ? `?api=${encodeURIComponent(api)}` : "";
    return (await fetch(`${this.origin(name)}/__control/requests${query}`)).json();
  }

  async fault(name: Name, spec: FaultSpec): Promise<void> {
    const answer = await fetch(`${this.origin(name)}/__control/faults`, {
      method: "POST",
      body: JSON.stringify(spec),
    });
    if (!answer.ok) throw new Error(`the fake ${name} refused the fault: ${await answer.text()}`);
  }

  /** Registers a file the platform will serve; returns the platform's reference to it. */
  async addFile<T>(
    name: Name,
    fileName: string,
    bytes: Uint8Array,
    contentType = "application/octet-stream",
  ): Promise<T> {
    const query = `?name=${encodeURIComponent(fileName)}&contentType=${encodeURIComponent(contentType)}`;
    return (
      await fetch(`${this.origin(name)}/__control/files${query}`, { method: "POST", body: bytes })
    ).json();
  }
}

/** A chat id no other test uses, so recordings can be told apart. */
export function uniqueChatId(): string {
  return String(100_000_000 + Math.floor(Math.random() * 800_000_000));
}
