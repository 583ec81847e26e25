import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AppEnv } from "./app-env";
import { readConfig, type Config } from "./config";
import type { Bindings } from "./env";
import { AppError } from "./errors";
import { blobUploads } from "./routes/blob-uploads";
import { files } from "./routes/files";
import { sessions } from "./routes/sessions";
import { share } from "./routes/share";
import { shim } from "./routes/shim";
import { uploads } from "./routes/uploads";
import { createBlobStore } from "./storage";

const configs = new WeakMap<Bindings, Config>();

function configFor(env: Bindings): Config {
  let config = configs.get(env);
  if (!config) {
    try {
      config = readConfig(env);
    } catch (error) {
      throw new AppError("misconfigured", `relay is misconfigured: ${(error as Error).message}`);
    }
    configs.set(env, config);
  }
  return config;
}

/** The relay: one sub-app per resource, one error boundary. */
export const app = new Hono<AppEnv>()
  .get("/healthz", (c) => c.json({ ok: true }))
  .use(async (c, next) => {
    const config = configFor(c.env);
    c.set("deps", { config, db: c.env.DB, store: createBlobStore(config, c.env), now: Date.now });
    await next();
  })
  .route("/v1/sessions", sessions)
  .route("/v1/uploads", uploads)
  .route("/v1/blob-uploads", blobUploads)
  .route("/v1/files", files)
  .route("/d", share)
  .route("/shim", shim);

app.notFound((c) =>
  c.json(
    { error: { code: "not_found", message: `no route for ${c.req.method} ${c.req.path}` } },
    404,
  ),
);

app.onError((error, c) => {
  if (error instanceof AppError) {
    return c.json({ error: { code: error.code, message: error.message } }, error.status);
  }
  if (error instanceof HTTPException && error.status < 500) {
    return c.json(
      { error: { code: "invalid_request", message: error.message || "bad request" } },
      error.status,
    );
  }
  console.error(
    JSON.stringify({
      event: "unhandled_error",
      method: c.req.method,
      path: c.req.path,
      error: String(error),
      stack: (error as Error).stack,
    }),
  );
  return c.json({ error: { code: "internal", message: "internal error" } }, 500);
});
