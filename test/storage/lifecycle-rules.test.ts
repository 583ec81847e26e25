import { describe, expect, it } from "vitest";
import {
  lifecycleRules,
  lifecycleXml,
  wranglerLifecycleCommands,
} from "../../src/storage/lifecycle-rules";

describe("bucket lifecycle rules", () => {
  it("keeps blobs 2 × FILE_TTL_SECONDS + 1 day, rounded up to days; staging and multipart 1 day", () => {
    expect(lifecycleRules(604_800)).toEqual([
      { id: "airlock-blobs", prefix: "blobs/", expireDays: 15 },
      { id: "airlock-staging", prefix: "staging/", expireDays: 1 },
      { id: "airlock-multipart", prefix: "", abortMultipartDays: 1 },
    ]);
    expect(lifecycleRules(3600)[0]?.expireDays).toBe(2);
    expect(lifecycleRules(86_401)[0]?.expireDays).toBe(4);
  });

  it("renders the S3 XML and the wrangler commands", () => {
    const rules = lifecycleRules(86_400);
    expect(lifecycleXml(rules)).toBe(
      `<?xml version="1.0" encoding="UTF-8"?><LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
        `<Rule><ID>airlock-blobs</ID><Filter><Prefix>blobs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>3</Days></Expiration></Rule>` +
        `<Rule><ID>airlock-staging</ID><Filter><Prefix>staging/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>` +
        `<Rule><ID>airlock-multipart</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>` +
        `</LifecycleConfiguration>`,
    );
    expect(wranglerLifecycleCommands("bkt", rules)[0]).toEqual([
      "wrangler",
      "r2",
      "bucket",
      "lifecycle",
      "add",
      "bkt",
      "airlock-blobs",
      "blobs/",
      "--expire-days",
      "3",
      "--force",
    ]);
  });
});
