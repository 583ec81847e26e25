import { GetBucketLifecycleConfigurationCommand, S3Client } from "@aws-sdk/client-s3";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { s3Vars } from "../support/s3-vars";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));

describe("npm run bucket:lifecycle", () => {
  let s3: StrictS3;
  beforeAll(async () => {
    s3 = await startStrictS3();
  });
  afterAll(() => s3?.stop());

  it("applies the lifecycle rules to an S3 bucket and prints them", async () => {
    const { stdout } = await run(
      process.execPath,
      ["scripts/run-ts.mjs", "scripts/bucket-lifecycle.ts"],
      {
        cwd: root,
        env: {
          ...process.env,
          STORAGE: "s3",
          FILE_TTL_SECONDS: String(7 * 86_400),
          ...s3Vars(s3),
        },
      },
    );
    expect(stdout).toContain("PutBucketLifecycleConfiguration");
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const applied = await client.send(
      new GetBucketLifecycleConfigurationCommand({ Bucket: s3.bucket }),
    );
    const byPrefix = Object.fromEntries(
      (applied.Rules ?? []).map((rule) => [rule.Filter?.Prefix ?? rule.Prefix, rule]),
    );
    // blobs/: twice the 7-day file TTL plus a day, as a safety net behind the sweep.
    expect(byPrefix["blobs/"]?.Expiration?.Days).toBe(15);
    expect(byPrefix["staging/"]?.Expiration?.Days).toBe(1);
    const aborts = (applied.Rules ?? []).filter((rule) => rule.AbortIncompleteMultipartUpload);
    expect(
      aborts.map((rule) => rule.AbortIncompleteMultipartUpload?.DaysAfterInitiation),
    ).toContain(1);
  });
});
