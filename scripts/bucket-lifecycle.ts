// `npm run bucket:lifecycle [-- --dry-run]`: applies the lifecycle rules of
// src/storage/lifecycle-rules.ts to the relay's bucket and prints what it applied.
// STORAGE=s3 (from the environment, else wrangler.toml [vars]): PutBucketLifecycleConfiguration
// with S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY from the
// environment. R2: runs `wrangler r2 bucket lifecycle add` per rule on the BUCKET binding's bucket.
// FILE_TTL_SECONDS comes from the environment, else wrangler.toml, else 7 days.
import { PutBucketLifecycleConfigurationCommand, S3Client } from "@aws-sdk/client-s3";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { lifecycleRules, wranglerLifecycleCommands } from "../src/storage/lifecycle-rules";

const root = fileURLToPath(new URL("..", import.meta.url));
const dryRun = process.argv.includes("--dry-run");
const toml = readFileSync(`${root}/wrangler.toml`, "utf8");
const tomlVar = (name: string) => new RegExp(`^${name}\\s*=\\s*"([^"]*)"`, "m").exec(toml)?.[1];
const setting = (name: string) => process.env[name] || tomlVar(name);

const ttl = Number(setting("FILE_TTL_SECONDS") ?? 604_800);
if (!Number.isSafeInteger(ttl) || ttl <= 0) throw new Error(`bad FILE_TTL_SECONDS: ${ttl}`);
const rules = lifecycleRules(ttl);
const storage = (setting("STORAGE") ?? "r2").toLowerCase();

if (storage === "s3") {
  const need = (name: string) => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set`);
    return value;
  };
  const bucket = need("S3_BUCKET");
  const configuration = {
    Rules: rules.map((rule) => ({
      ID: rule.id,
      Filter: { Prefix: rule.prefix },
      Status: "Enabled" as const,
      ...(rule.expireDays !== undefined ? { Expiration: { Days: rule.expireDays } } : {}),
      ...(rule.abortMultipartDays !== undefined
        ? { AbortIncompleteMultipartUpload: { DaysAfterInitiation: rule.abortMultipartDays } }
        : {}),
    })),
  };
  console.log(
    `S3 bucket ${bucket}: PutBucketLifecycleConfiguration\n${JSON.stringify(configuration, null, 2)}`,
  );
  if (!dryRun) {
    const client = new S3Client({
      endpoint: need("S3_ENDPOINT"),
      region: process.env.S3_REGION || "auto",
      forcePathStyle: true,
      credentials: {
        accessKeyId: need("S3_ACCESS_KEY_ID"),
        secretAccessKey: need("S3_SECRET_ACCESS_KEY"),
      },
    });
    await client.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: bucket,
        LifecycleConfiguration: configuration,
      }),
    );
    console.log("applied");
  }
} else {
  const bucket =
    /\[\[r2_buckets\]\][^[]*?bucket_name\s*=\s*"([^"]+)"/.exec(toml)?.[1] ?? "airlock-blobs";
  for (const argv of wranglerLifecycleCommands(bucket, rules)) {
    console.log(`npx ${argv.map((a) => (a === "" ? '""' : a)).join(" ")}`);
    if (dryRun) continue;
    const run = spawnSync("npx", argv, { cwd: root, stdio: "inherit" });
    if (run.status !== 0) process.exit(run.status ?? 1);
  }
}
