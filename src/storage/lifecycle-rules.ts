/**
 * The bucket's lifecycle rules, as data. `npm run bucket:lifecycle` applies them (S3:
 * PutBucketLifecycleConfiguration; R2: `wrangler r2 bucket lifecycle add`).
 *
 * The scheduled sweep (src/services/sweep/sweep.ts) is what deletes blobs on time: it knows,
 * from D1, which files still use a blob. These rules are the safety net for objects the
 * sweep never reaches, and they count an object's age from its upload, which a dedup
 * hit does not reset: a blob first uploaded on day 0 and deduplicated on day 6 is used
 * until day 13 (with the default 7-day TTL) while its object is 6 days old. So the
 * `blobs/` rule is generous: twice the file TTL plus a day, rounded up to whole days. A
 * blob deduplicated again and again for longer than that has its object written again by
 * the sweep (same bytes) before the rule could delete it.
 */
export interface LifecycleRule {
  id: string;
  /** Object key prefix the rule applies to. */
  prefix: string;
  /** Objects older than this many days are deleted. */
  expireDays?: number;
  /** Multipart uploads not completed within this many days are aborted. */
  abortMultipartDays?: number;
}

const DAY_SECONDS = 86_400;

/** Days after its upload the bucket deletes a `blobs/` object. */
export function blobLifecycleDays(fileTtlSeconds: number): number {
  return Math.ceil((2 * fileTtlSeconds) / DAY_SECONDS) + 1;
}

/** When (ms) the bucket's `blobs/` rule deletes an object last written at `writtenAt`. */
export function blobRuleEnd(writtenAt: number, fileTtlSeconds: number): number {
  return writtenAt + blobLifecycleDays(fileTtlSeconds) * DAY_SECONDS * 1000;
}

/** The rules for a relay whose files live `fileTtlSeconds`. */
export function lifecycleRules(fileTtlSeconds: number): LifecycleRule[] {
  return [
    {
      id: "airlock-blobs",
      prefix: "blobs/",
      expireDays: blobLifecycleDays(fileTtlSeconds),
    },
    // Staging objects live seconds (attachments and seeds are hashed into them, then moved).
    { id: "airlock-staging", prefix: "staging/", expireDays: 1 },
    { id: "airlock-multipart", prefix: "", abortMultipartDays: 1 },
  ];
}

/** The `wrangler r2 bucket lifecycle add` commands (as argv) that apply the rules to R2. */
export function wranglerLifecycleCommands(bucket: string, rules: LifecycleRule[]): string[][] {
  return rules.map((rule) => {
    const argv = ["wrangler", "r2", "bucket", "lifecycle", "add", bucket, rule.id, rule.prefix];
    if (rule.expireDays !== undefined) argv.push("--expire-days", String(rule.expireDays));
    if (rule.abortMultipartDays !== undefined)
      argv.push("--abort-multipart-days", String(rule.abortMultipartDays));
    argv.push("--force");
    return argv;
  });
}
