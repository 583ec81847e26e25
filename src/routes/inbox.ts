import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { requireCaller, sessionOf } from "../auth/middleware";
import { ackInboxItem, findInboxItem } from "../db/inbox";
import { AppError } from "../errors";
import { listReadyInbox } from "../services/inbox/inbox";

/** Sandbox routes: files waiting for the sandbox, acknowledged once written. */
export const inbox = new Hono<AppEnv>()
  .use(requireCaller("session"))
  .get("/", async (c) => {
    const session = sessionOf(c.var.caller);
    return c.json({
      items: await listReadyInbox(c.var.deps, session.id, new URL(c.req.url).origin),
    });
  })
  .post("/:id/ack", async (c) => {
    const { deps } = c.var;
    const item = await findInboxItem(deps.db, c.req.param("id"));
    if (
      !item ||
      item.sessionId !== sessionOf(c.var.caller).id ||
      (item.status !== "ready" && item.status !== "acked")
    ) {
      throw new AppError("inbox_item_not_found");
    }
    await ackInboxItem(deps.db, item.id, deps.now());
    const acked = await findInboxItem(deps.db, item.id);
    return c.json({
      itemId: item.id,
      ackedAt: new Date(acked?.ackedAt ?? deps.now()).toISOString(),
    });
  });
