import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AppEnv } from "./app-env";
import { readConfig, type Config } from "./config";
import type { Deps } from "./deps";
import type { Bindings } from "./env";
import { AppError, codeForStatus, ERRORS } from "./errors";
import { loggablePath, logEvent } from "./log";
import { blobUploads } from "./routes/blob-uploads";
import { createPlatforms, type Platforms } from "./platforms";
import { files } from "./routes/files";
import { home } from "./routes/home";
import { inbox } from "./routes/inbox";
import { mcp } from "./routes/mcp";
import { webhooks } from "./routes/webhooks";
import { sessions } from "./routes/sessions";
import { sessionFiles } from "./routes/session-files";
import { share } from "./routes/share";
import { shim } from "./routes/shim";
import { singleUploads } from "./routes/single-uploads";
import { uploads } from "./routes/uploads";
import { requests } from "./routes/requests";
import { uploadLinks } from "./routes/upload-links";
import { createBlobStore, type BlobStore } from "./storage";

interface Setup {
  config: Config;
  platforms: Platforms;
  store: BlobStore;
}

const setups = new WeakMap<Bindings, Setup>();

/** Config, store and platform clients, made once per environment rather than per request. */
export function setupFor(env: Bindings): Setup {
  let setup = setups.get(env);
  if (!setup) {
    let config: Config;
    try {
      config = readConfig(env);
    } catch (error) {
      throw new AppError("misconfigured", `relay is misconfigured: ${(error as Error).message}`);
    }
    setup = { config, platforms: createPlatforms(config), store: createBlobStore(config, env) };
    setups.set(env, setup);
  }
  return setup;
}

/** The relay's deps for one request, queue batch or scheduled run. */
export function depsFor(env: Bindings, ctx: Pick<ExecutionContext, "waitUntil">): Deps {
  const { config, platforms, store } = setupFor(env);
  return {
    config,
    platforms,
    db: env.DB,
    store,
    now: Date.now,
    verifyQueue: env.VERIFY_QUEUE,
    waitUntil: (work) => ctx.waitUntil(work),
  };
}

/** The relay: one sub-app per resource, one error boundary. */
export const app = new Hono<AppEnv>()
  .get("/healthz", (c) => c.json({ ok: true }))
  .route("/", home)
  .use(async (c, next) => {
    c.set("deps", depsFor(c.env, c.executionCtx));
    await next();
  })
  .route("/v1/sessions", sessions)
  .route("/v1/sessions", sessionFiles)
  .route("/v1/uploads", uploads)
  .route("/v1/single-uploads", singleUploads)
  .route("/v1/blob-uploads", blobUploads)
  .route("/v1/files", files)
  .route("/v1/inbox", inbox)
  .route("/webhooks", webhooks)
  .route("/d", share)
  .route("/shim", shim)
  .route("/v1/requests", requests)
  .route("/u", uploadLinks)
  .route("/mcp", mcp);

app.notFound((c) =>
  c.json(
    { error: { code: "not_found", message: `no route for ${c.req.method} ${c.req.path}` } },
    404,
  ),
);

app.onError((error, c) => {
  if (error instanceof AppError) {
    if (error.status === 503) c.header("retry-after", "5");
    return c.json({ error: { code: error.code, message: error.message } }, error.status);
  }
  if (error instanceof HTTPException && error.status < 500) {
    const code = codeForStatus(error.status);
    return c.json(
      { error: { code, message: error.message || ERRORS[code].message } },
      error.status,
    );
  }
  logEvent(
    "unhandled_error",
    {
      method: c.req.method,
      path: loggablePath(c.req.path),
      error: String(error),
      stack: (error as Error).stack,
    },
    "error",
  );
  return c.json({ error: { code: "internal", message: "internal error" } }, 500);
});
