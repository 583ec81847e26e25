import type { Bindings } from "./env";
import type { DiscordConfig } from "./platforms/discord";
import type { SlackConfig } from "./platforms/slack";
import type { TelegramConfig } from "./platforms/telegram";
import type { WhatsAppConfig } from "./platforms/whatsapp";
import { DEFAULT_TIERS, type Tiers } from "./platforms/tiers";

const DAY = 86_400;
const GiB = 1024 ** 3;

/** Settings with their defaults, read once from the Worker's environment. */
export interface Config {
  adminToken: string;
  signingKey: string;
  storage: "r2" | "s3";
  s3?: S3Config;
  fileTtlSeconds: number;
  linkTtlSeconds: number;
  uploadUrlTtlSeconds: number;
  /** How long an inbox download URL from `/mcp`'s `receive_files` works. */
  mcpDownloadTtlSeconds: number;
  /**
   * How long a file may stay pending before the sweep re-sends its verification (its queue
   * message was lost, or its retries ran out into the dead-letter queue).
   */
  verifyResendAfterSeconds: number;
  /**
   * How long an upload through an upload link holds its room in the session's quota with no
   * byte arriving: each part renews it, reading the upload's state does not.
   */
  linkUploadLeaseSeconds: number;
  /**
   * How long a delivery in flight holds its Idempotency-Key: the sending request renews it
   * while it runs; after a crash it lapses, a retry takes the delivery over, the sweep fails it.
   */
  deliveryLeaseSeconds: number;
  maxFileBytes: number;
  /**
   * Largest upload a store the relay fronts (R2) can take in one request: Workers cap request
   * bodies by plan (100 MB on Free and Pro). Unset means no cap (local development).
   */
  relayUploadMaxBytes?: number;
  /** Default and ceiling for a session's lifetime. */
  sessionTtlSeconds: number;
  maxSessionTtlSeconds: number;
  /** Default byte quota of a session when the operator names none. */
  sessionQuotaBytes: number;
  /** Chat platforms, each present only when its bot token is set. */
  telegram?: TelegramConfig;
  discord?: DiscordConfig;
  slack?: SlackConfig;
  whatsapp?: WhatsAppConfig;
  tiers: Tiers;
}

export interface S3Config {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** Reads and checks the environment; throws a plain Error naming the first bad setting. */
export function readConfig(env: Bindings): Config {
  const adminToken = required(env, "AIRLOCK_ADMIN_TOKEN");
  const signingKey = required(env, "AIRLOCK_SIGNING_KEY");
  if (signingKey.length < 32) throw new Error("AIRLOCK_SIGNING_KEY must be at least 32 characters");
  const storage = (env.STORAGE || "r2").toLowerCase();
  if (storage !== "r2" && storage !== "s3")
    throw new Error(`STORAGE must be "r2" or "s3", not "${storage}"`);
  return {
    adminToken,
    signingKey,
    storage,
    s3: storage === "s3" ? readS3(env) : undefined,
    fileTtlSeconds: positiveInt(env, "FILE_TTL_SECONDS", 7 * DAY),
    linkTtlSeconds: positiveInt(env, "LINK_TTL_SECONDS", DAY),
    uploadUrlTtlSeconds: positiveInt(env, "UPLOAD_URL_TTL_SECONDS", 3600),
    mcpDownloadTtlSeconds: positiveInt(env, "MCP_DOWNLOAD_TTL_SECONDS", 600),
    verifyResendAfterSeconds: positiveInt(env, "VERIFY_RESEND_AFTER_SECONDS", 600),
    linkUploadLeaseSeconds: positiveInt(env, "LINK_UPLOAD_LEASE_SECONDS", 300),
    deliveryLeaseSeconds: positiveInt(env, "DELIVERY_LEASE_SECONDS", 120),
    maxFileBytes: positiveInt(env, "MAX_FILE_BYTES", 5 * GiB),
    relayUploadMaxBytes: env.RELAY_UPLOAD_MAX_BYTES
      ? positiveInt(env, "RELAY_UPLOAD_MAX_BYTES", 0)
      : undefined,
    sessionTtlSeconds: positiveInt(env, "SESSION_TTL_SECONDS", DAY),
    maxSessionTtlSeconds: 30 * DAY,
    sessionQuotaBytes: positiveInt(env, "SESSION_QUOTA_BYTES", 50 * GiB),
    ...readPlatforms(env),
  };
}

function readPlatforms(
  env: Bindings,
): Pick<Config, "telegram" | "discord" | "slack" | "whatsapp" | "tiers"> {
  const tiers: Tiers = {
    telegram: {
      photo: positiveInt(env, "TELEGRAM_MAX_PHOTO_BYTES", DEFAULT_TIERS.telegram.photo),
      upload: positiveInt(env, "TELEGRAM_MAX_UPLOAD_BYTES", DEFAULT_TIERS.telegram.upload),
      download: positiveInt(env, "TELEGRAM_MAX_DOWNLOAD_BYTES", DEFAULT_TIERS.telegram.download),
    },
    discord: { upload: positiveInt(env, "DISCORD_MAX_UPLOAD_BYTES", DEFAULT_TIERS.discord.upload) },
    slack: { upload: positiveInt(env, "SLACK_MAX_UPLOAD_BYTES", DEFAULT_TIERS.slack.upload) },
    whatsapp: {
      image: positiveInt(env, "WHATSAPP_MAX_IMAGE_BYTES", DEFAULT_TIERS.whatsapp.image),
      video: positiveInt(env, "WHATSAPP_MAX_VIDEO_BYTES", DEFAULT_TIERS.whatsapp.video),
      audio: positiveInt(env, "WHATSAPP_MAX_AUDIO_BYTES", DEFAULT_TIERS.whatsapp.audio),
      document: positiveInt(env, "WHATSAPP_MAX_DOCUMENT_BYTES", DEFAULT_TIERS.whatsapp.document),
    },
  };
  return {
    tiers,
    telegram: env.TELEGRAM_BOT_TOKEN
      ? {
          botToken: env.TELEGRAM_BOT_TOKEN,
          webhookSecret: env.TELEGRAM_WEBHOOK_SECRET || undefined,
          apiRoot: env.TELEGRAM_API_ROOT || "https://api.telegram.org",
          maxDownloadBytes: tiers.telegram.download,
        }
      : undefined,
    discord: env.DISCORD_BOT_TOKEN
      ? {
          botToken: env.DISCORD_BOT_TOKEN,
          publicKey: env.DISCORD_PUBLIC_KEY || undefined,
          apiBase: env.DISCORD_API_BASE || "https://discord.com/api/v10",
          attachmentHosts: hostList(env.DISCORD_ATTACHMENT_HOSTS, [
            "cdn.discordapp.com",
            "media.discordapp.net",
          ]),
        }
      : undefined,
    slack: env.SLACK_BOT_TOKEN
      ? {
          botToken: env.SLACK_BOT_TOKEN,
          signingSecret: env.SLACK_SIGNING_SECRET || undefined,
          apiUrl: env.SLACK_API_URL || "https://slack.com/api/",
          fileHosts: hostList(env.SLACK_FILE_HOSTS, ["files.slack.com"]),
        }
      : undefined,
    whatsapp: env.WHATSAPP_ACCESS_TOKEN
      ? {
          accessToken: env.WHATSAPP_ACCESS_TOKEN,
          phoneNumberId: required(env, "WHATSAPP_PHONE_NUMBER_ID"),
          appSecret: env.WHATSAPP_APP_SECRET || undefined,
          verifyToken: env.WHATSAPP_VERIFY_TOKEN || undefined,
          apiBase: (env.WHATSAPP_API_BASE || "https://graph.facebook.com/v23.0").replace(
            /\/+$/,
            "",
          ),
          // Media URLs from `GET /{media-id}` point at Meta's attachment CDN.
          mediaHosts: hostList(env.WHATSAPP_MEDIA_HOSTS, ["lookaside.fbsbx.com"]),
        }
      : undefined,
  };
}

function hostList(raw: string | undefined, fallback: string[]): string[] {
  const hosts = (raw ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
  return hosts.length > 0 ? hosts : fallback;
}

function readS3(env: Bindings): S3Config {
  return {
    endpoint: required(env, "S3_ENDPOINT"),
    region: env.S3_REGION || "auto",
    bucket: required(env, "S3_BUCKET"),
    accessKeyId: required(env, "S3_ACCESS_KEY_ID"),
    secretAccessKey: required(env, "S3_SECRET_ACCESS_KEY"),
  };
}

function required<K extends keyof Bindings>(env: Bindings, name: K): string {
  const value = env[name];
  if (typeof value !== "string" || value === "") throw new Error(`${String(name)} is not set`);
  return value;
}

function positiveInt<K extends keyof Bindings>(env: Bindings, name: K, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new Error(`${String(name)} must be a positive integer, not "${String(raw)}"`);
  }
  return value;
}
