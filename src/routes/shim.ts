import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { SHIM_SH_SOURCE, SHIM_SOURCE, SHIM_VERSION } from "../shim/bundle.generated";

/** The relay serves its own shim, so a sandbox installs it with one `curl`. */
export const shim = new Hono<AppEnv>()
  .get("/airlock.mjs", (c) => {
    c.header("content-type", "text/javascript; charset=utf-8");
    c.header("cache-control", "public, max-age=300");
    c.header("x-airlock-shim-version", SHIM_VERSION);
    c.header("x-content-type-options", "nosniff");
    return c.body(SHIM_SOURCE);
  })
  // The POSIX sh + curl fallback (send and pull), for sandboxes without Node.
  .get("/airlock.sh", (c) => {
    c.header("content-type", "text/x-shellscript; charset=utf-8");
    c.header("cache-control", "public, max-age=300");
    c.header("x-airlock-shim-version", SHIM_VERSION);
    c.header("x-content-type-options", "nosniff");
    return c.body(SHIM_SH_SOURCE);
  });
