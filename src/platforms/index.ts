import type { Config } from "../config";
import { DiscordPlatform } from "./discord";
import type { Platform, PlatformName } from "./platform";
import { SlackPlatform } from "./slack";
import { TelegramPlatform } from "./telegram";
import { WhatsAppPlatform } from "./whatsapp";

export type { Platform, PlatformName } from "./platform";

export type Platforms = Partial<Record<PlatformName, Platform>>;

/** The configured platforms; one without its bot token is simply absent. */
export function createPlatforms(config: Config): Platforms {
  return {
    telegram: config.telegram && new TelegramPlatform(config.telegram),
    discord: config.discord && new DiscordPlatform(config.discord),
    slack: config.slack && new SlackPlatform(config.slack),
    whatsapp: config.whatsapp && new WhatsAppPlatform(config.whatsapp),
  };
}

/** `telegram:<chatId>` → its parts, or null when it is not a destination. */
export function parseDestination(to: string): { platform: PlatformName; target: string } | null {
  const match = /^(telegram|discord|slack|whatsapp):(.+)$/.exec(to);
  return match ? { platform: match[1] as PlatformName, target: match[2]! } : null;
}
