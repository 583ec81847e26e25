import { z } from "zod";
import type { Bindings } from "./env";
import type { DiscordConfig } from "./platforms/discord";
import type { SlackConfig } from "./platforms/slack";
import type { TelegramConfig } from "./platforms/telegram";
import type { WhatsAppConfig } from "./platforms/whatsapp";
import { DEFAULT_TIERS, type Tiers } from "./platforms/tiers";

const DAY = 86_400;
const GiB = 1024 ** 3;

/**
 * Settings with their defaults, read from the Worker's environment by {@link readConfig} (once
 * per environment: `setupFor` in app.ts keeps what it read).
 */
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
   * Largest body one upload request through the relay itself may carry (uploads to R2, upload
   * links, MCP uploads): Workers cap request bodies by plan (100 MB on Free and Pro). Unset
   * means no cap (local development).
   */
  relayUploadMaxBytes?: number;
  /** A session's lifetime when its creator names none. */
  sessionTtlSeconds: number;
  /** The longest lifetime a session may ask for: 30 days, not a setting. */
  maxSessionTtlSeconds: number;
  /** Default byte quota of a session when the operator names none. */
  sessionQuotaBytes: number;
  /** Chat platforms, each present only when its token is set (WhatsApp: its access token). */
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

// The relay's environment, in sections read in this order; the first bad setting is the error.
// Each key is the variable's name, each message what is wrong with it (readConfig joins them).
// An empty value counts as unset; wrangler's [vars] may give numbers as well as text.

/** A setting that must be given. */
const given = z.string({ error: "is not set" }).min(1, { error: "is not set" });

/** Text with a default. */
const text = (fallback: string) =>
  z
    .string({ error: "must be text" })
    .optional()
    .transform((value) => value || fallback);

/** Text that may be unset. */
const optionalText = z
  .string({ error: "must be text" })
  .optional()
  .transform((value) => value || undefined);

/** A positive whole number, `fallback` when unset. */
const positiveInt = <T extends number | undefined>(fallback: T) =>
  z
    .unknown()
    .optional()
    .transform((raw, ctx): number | T => {
      if (raw === undefined || raw === "") return fallback;
      const value = Number(raw);
      if (Number.isSafeInteger(value) && value > 0) return value;
      ctx.addIssue({ code: "custom", message: `must be a positive integer, not "${String(raw)}"` });
      return z.NEVER;
    });

/** Comma-separated host names, `fallback` when none are given. */
const hostList = (fallback: string[]) =>
  optionalText.transform((raw) => {
    const hosts = (raw ?? "")
      .split(",")
      .map((h) => h.trim())
      .filter(Boolean);
    return hosts.length > 0 ? hosts : fallback;
  });

const RELAY_ENV = z.object({
  AIRLOCK_ADMIN_TOKEN: given,
  AIRLOCK_SIGNING_KEY: given.min(32, { error: "must be at least 32 characters" }),
  STORAGE: z.preprocess(
    (value) => String(value || "r2").toLowerCase(),
    z.enum(["r2", "s3"], {
      error: (issue) => `must be "r2" or "s3", not "${String(issue.input)}"`,
    }),
  ),
});

/** Read only when STORAGE=s3. */
const S3_ENV = z.object({
  S3_ENDPOINT: given,
  S3_REGION: text("auto"),
  S3_BUCKET: given,
  S3_ACCESS_KEY_ID: given,
  S3_SECRET_ACCESS_KEY: given,
});

const LIMITS_ENV = z.object({
  FILE_TTL_SECONDS: positiveInt(7 * DAY),
  LINK_TTL_SECONDS: positiveInt(DAY),
  UPLOAD_URL_TTL_SECONDS: positiveInt(3600),
  MCP_DOWNLOAD_TTL_SECONDS: positiveInt(600),
  VERIFY_RESEND_AFTER_SECONDS: positiveInt(600),
  LINK_UPLOAD_LEASE_SECONDS: positiveInt(300),
  DELIVERY_LEASE_SECONDS: positiveInt(120),
  MAX_FILE_BYTES: positiveInt(5 * GiB),
  RELAY_UPLOAD_MAX_BYTES: positiveInt(undefined),
  SESSION_TTL_SECONDS: positiveInt(DAY),
  SESSION_QUOTA_BYTES: positiveInt(50 * GiB),
  TELEGRAM_MAX_PHOTO_BYTES: positiveInt(DEFAULT_TIERS.telegram.photo),
  TELEGRAM_MAX_UPLOAD_BYTES: positiveInt(DEFAULT_TIERS.telegram.upload),
  TELEGRAM_MAX_DOWNLOAD_BYTES: positiveInt(DEFAULT_TIERS.telegram.download),
  DISCORD_MAX_UPLOAD_BYTES: positiveInt(DEFAULT_TIERS.discord.upload),
  SLACK_MAX_UPLOAD_BYTES: positiveInt(DEFAULT_TIERS.slack.upload),
  WHATSAPP_MAX_IMAGE_BYTES: positiveInt(DEFAULT_TIERS.whatsapp.image),
  WHATSAPP_MAX_VIDEO_BYTES: positiveInt(DEFAULT_TIERS.whatsapp.video),
  WHATSAPP_MAX_AUDIO_BYTES: positiveInt(DEFAULT_TIERS.whatsapp.audio),
  WHATSAPP_MAX_DOCUMENT_BYTES: positiveInt(DEFAULT_TIERS.whatsapp.document),
});

const PLATFORMS_ENV = z.object({
  TELEGRAM_BOT_TOKEN: optionalText,
  TELEGRAM_WEBHOOK_SECRET: optionalText,
  TELEGRAM_API_ROOT: text("https://api.telegram.org"),
  DISCORD_BOT_TOKEN: optionalText,
  DISCORD_PUBLIC_KEY: optionalText,
  DISCORD_API_BASE: text("https://discord.com/api/v10"),
  DISCORD_ATTACHMENT_HOSTS: hostList(["cdn.discordapp.com", "media.discordapp.net"]),
  SLACK_BOT_TOKEN: optionalText,
  SLACK_SIGNING_SECRET: optionalText,
  SLACK_API_URL: text("https://slack.com/api/"),
  SLACK_FILE_HOSTS: hostList(["files.slack.com"]),
  WHATSAPP_ACCESS_TOKEN: optionalText,
  WHATSAPP_APP_SECRET: optionalText,
  WHATSAPP_VERIFY_TOKEN: optionalText,
  WHATSAPP_API_BASE: text("https://graph.facebook.com/v23.0").transform((url) =>
    url.replace(/\/+$/, ""),
  ),
  // Media URLs from `GET /{media-id}` point at Meta's attachment CDN.
  WHATSAPP_MEDIA_HOSTS: hostList(["lookaside.fbsbx.com"]),
});

/** Read only when WHATSAPP_ACCESS_TOKEN is set. */
const WHATSAPP_ENV = z.object({ WHATSAPP_PHONE_NUMBER_ID: given });

/** Reads and checks the environment; throws a plain Error naming the first bad setting. */
export function readConfig(env: Bindings): Config {
  const relay = parse(RELAY_ENV, env);
  const s3 = relay.STORAGE === "s3" ? parse(S3_ENV, env) : undefined;
  const limits = parse(LIMITS_ENV, env);
  const platforms = parse(PLATFORMS_ENV, env);
  const whatsapp = platforms.WHATSAPP_ACCESS_TOKEN ? parse(WHATSAPP_ENV, env) : undefined;
  const tiers: Tiers = {
    telegram: {
      photo: limits.TELEGRAM_MAX_PHOTO_BYTES,
      upload: limits.TELEGRAM_MAX_UPLOAD_BYTES,
      download: limits.TELEGRAM_MAX_DOWNLOAD_BYTES,
    },
    discord: { upload: limits.DISCORD_MAX_UPLOAD_BYTES },
    slack: { upload: limits.SLACK_MAX_UPLOAD_BYTES },
    whatsapp: {
      image: limits.WHATSAPP_MAX_IMAGE_BYTES,
      video: limits.WHATSAPP_MAX_VIDEO_BYTES,
      audio: limits.WHATSAPP_MAX_AUDIO_BYTES,
      document: limits.WHATSAPP_MAX_DOCUMENT_BYTES,
    },
  };
  return {
    adminToken: relay.AIRLOCK_ADMIN_TOKEN,
    signingKey: relay.AIRLOCK_SIGNING_KEY,
    storage: relay.STORAGE,
    s3: s3 && {
      endpoint: s3.S3_ENDPOINT,
      region: s3.S3_REGION,
      bucket: s3.S3_BUCKET,
      accessKeyId: s3.S3_ACCESS_KEY_ID,
      secretAccessKey: s3.S3_SECRET_ACCESS_KEY,
    },
    fileTtlSeconds: limits.FILE_TTL_SECONDS,
    linkTtlSeconds: limits.LINK_TTL_SECONDS,
    uploadUrlTtlSeconds: limits.UPLOAD_URL_TTL_SECONDS,
    mcpDownloadTtlSeconds: limits.MCP_DOWNLOAD_TTL_SECONDS,
    verifyResendAfterSeconds: limits.VERIFY_RESEND_AFTER_SECONDS,
    linkUploadLeaseSeconds: limits.LINK_UPLOAD_LEASE_SECONDS,
    deliveryLeaseSeconds: limits.DELIVERY_LEASE_SECONDS,
    maxFileBytes: limits.MAX_FILE_BYTES,
    relayUploadMaxBytes: limits.RELAY_UPLOAD_MAX_BYTES,
    sessionTtlSeconds: limits.SESSION_TTL_SECONDS,
    maxSessionTtlSeconds: 30 * DAY,
    sessionQuotaBytes: limits.SESSION_QUOTA_BYTES,
    tiers,
    telegram: platforms.TELEGRAM_BOT_TOKEN
      ? {
          botToken: platforms.TELEGRAM_BOT_TOKEN,
          webhookSecret: platforms.TELEGRAM_WEBHOOK_SECRET,
          apiRoot: platforms.TELEGRAM_API_ROOT,
          maxDownloadBytes: tiers.telegram.download,
        }
      : undefined,
    discord: platforms.DISCORD_BOT_TOKEN
      ? {
          botToken: platforms.DISCORD_BOT_TOKEN,
          publicKey: platforms.DISCORD_PUBLIC_KEY,
          apiBase: platforms.DISCORD_API_BASE,
          attachmentHosts: platforms.DISCORD_ATTACHMENT_HOSTS,
        }
      : undefined,
    slack: platforms.SLACK_BOT_TOKEN
      ? {
          botToken: platforms.SLACK_BOT_TOKEN,
          signingSecret: platforms.SLACK_SIGNING_SECRET,
          apiUrl: platforms.SLACK_API_URL,
          fileHosts: platforms.SLACK_FILE_HOSTS,
        }
      : undefined,
    whatsapp:
      platforms.WHATSAPP_ACCESS_TOKEN && whatsapp
        ? {
            accessToken: platforms.WHATSAPP_ACCESS_TOKEN,
            phoneNumberId: whatsapp.WHATSAPP_PHONE_NUMBER_ID,
            appSecret: platforms.WHATSAPP_APP_SECRET,
            verifyToken: platforms.WHATSAPP_VERIFY_TOKEN,
            apiBase: platforms.WHATSAPP_API_BASE,
            mediaHosts: platforms.WHATSAPP_MEDIA_HOSTS,
          }
        : undefined,
  };
}

/** Parses one section of the environment; throws "<VARIABLE> <what is wrong>". */
function parse<T extends z.ZodType>(schema: T, env: Bindings): z.output<T> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new Error(`${issue.path.join(".")} ${issue.message}`);
}
