import { app, depsFor } from "./app";
import type { Bindings } from "./env";
import { logEvent } from "./log";
import { sweep } from "./services/sweep/sweep";
import { consumeVerifyBatch } from "./services/uploads/verify-queue";
import type { VerifyJob } from "./verify-job";

/**
 * The Worker: `fetch` is the relay; `queue` consumes the verify queue (pending uploads'
 * read-back); `scheduled` is the hourly sweep (the Cron Trigger in wrangler.toml), run
 * against the trigger's scheduled time.
 */
export default {
  fetch: app.fetch,
  async queue(batch, env, ctx) {
    await consumeVerifyBatch(depsFor(env, ctx), batch);
  },
  async scheduled(controller, env, ctx) {
    const started = Date.now();
    const deps = { ...depsFor(env, ctx), now: () => controller.scheduledTime };
    const work = sweep(deps).then((result) =>
      logEvent("sweep", {
        cron: controller.cron,
        scheduledTime: new Date(controller.scheduledTime).toISOString(),
        ...result,
        durationMs: Date.now() - started,
      }),
    );
    ctx.waitUntil(work);
    await work;
  },
} satisfies ExportedHandler<Bindings, VerifyJob>;
