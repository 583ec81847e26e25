import { describe, expect, it } from "vitest";
import { lifecycleRules, wranglerLifecycleCommands } from "../../src/storage/lifecycle-rules";

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

  it("renders the wrangler commands", () => {
    const rules = lifecycleRules(86_400);
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
