import type { Bindings } from "./env";

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
  maxFileBytes: number;
  /** Default and ceiling for a session's lifetime. */
  sessionTtlSeconds: number;
  maxSessionTtlSeconds: number;
  /** Default byte quota of a session when the operator names none. */
  sessionQuotaBytes: number;
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
    maxFileBytes: positiveInt(env, "MAX_FILE_BYTES", 5 * GiB),
    sessionTtlSeconds: positiveInt(env, "SESSION_TTL_SECONDS", DAY),
    maxSessionTtlSeconds: 30 * DAY,
    sessionQuotaBytes: positiveInt(env, "SESSION_QUOTA_BYTES", 50 * GiB),
  };
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
