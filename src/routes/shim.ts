import { Hono, type Context } from "hono";
import type { AppEnv } from "../app-env";
import {
  SHIM_PY_SOURCE,
  SHIM_SH_SOURCE,
  SHIM_SOURCE,
  SHIM_VERSION,
} from "../shim/bundle.generated";

/** One shim script, with the headers every shim download gets. */
function script(c: Context<AppEnv>, contentType: string, source: string): Response {
  c.header("content-type", `${contentType}; charset=utf-8`);
  c.header("cache-control", "public, max-age=300");
  c.header("x-airlock-shim-version", SHIM_VERSION);
  c.header("x-content-type-options", "nosniff");
  return c.body(source);
}

/** The relay serves its own shim, so a sandbox installs it with one `curl`. */
export const shim = new Hono<AppEnv>()
  .get("/airlock.mjs", (c) => script(c, "text/javascript", SHIM_SOURCE))
  // The POSIX sh + curl fallback (send and pull), for sandboxes without Node.
  .get("/airlock.sh", (c) => script(c, "text/x-shellscript", SHIM_SH_SOURCE))
  // The Python shim (the same commands as the Node one), for sandboxes with Python only.
  .get("/airlock.py", (c) => script(c, "text/x-python", SHIM_PY_SOURCE));
