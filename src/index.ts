import { app, setupFor } from "./app";
import type { Bindings } from "./env";
import { logEvent } from "./log";
import { sweep } from "./services/sweep";

/**
 * The Worker: `fetch` is the relay; `scheduled` is the hourly sweep (the Cron Trigger in
 * wrangler.toml), run against the trigger's scheduled time.
 */
export default {
  fetch: app.fetch,
  async scheduled(controller, env, ctx) {
    const { store } = setupFor(env);
    const started = Date.now();
    const work = sweep({
      db: env.DB,
      store,
      now: () => controller.scheduledTime,
    }).then((result) =>
      logEvent("sweep", { cron: controller.cron, ...result, durationMs: Date.now() - started }),
    );
    ctx.waitUntil(work);
    await work;
  },
} satisfies ExportedHandler<Bindings>;
