import { env } from "cloudflare:test";
import { inject } from "vitest";
import type { Bindings } from "../../src/env";

/** A relay configuration the route suites run against. */
export interface Backend {
  name: "r2" | "s3";
  env: Bindings;
}

/** The local R2 binding (the embedded default) and a strict S3 server on loopback. */
export function backends(): Backend[] {
  const s3 = inject("s3");
  return [
    { name: "r2", env: { ...env, STORAGE: "r2" } },
    {
      name: "s3",
      env: {
        ...env,
        STORAGE: "s3",
        S3_ENDPOINT: s3.endpoint,
        S3_REGION: s3.region,
        S3_BUCKET: s3.bucket,
        S3_ACCESS_KEY_ID: s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      },
    },
  ];
}
