import type { PlatformName } from "../platforms/platform";

/**
 * Where a file came from: `sandbox` (sent by the sandbox: uploads, one-request uploads),
 * `seed` (the operator's seed), `chat:<platform>` (an attachment a person sent in a chat),
 * `upload-link` (a person's upload through an `airlock request` link).
 */
export type FileOrigin = "sandbox" | "seed" | "upload-link" | `chat:${PlatformName}`;

const CHAT_PLATFORMS: readonly PlatformName[] = ["telegram", "discord", "slack", "whatsapp"];

/** Every origin a file can have, in the order the docs list them. */
export const FILE_ORIGINS: readonly FileOrigin[] = [
  "sandbox",
  "seed",
  ...CHAT_PLATFORMS.map((platform) => `chat:${platform}` as const),
  "upload-link",
];

export function isFileOrigin(value: string): value is FileOrigin {
  return (FILE_ORIGINS as readonly string[]).includes(value);
}
