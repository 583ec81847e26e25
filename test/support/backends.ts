import { env } from "cloudflare:test";
import { inject } from "vitest";
import type { Bindings } from "../../src/env";
import { s3Vars } from "./s3-vars";

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
        ...s3Vars(s3),
      },
    },
  ];
}
