import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../app-env";
import { requireCaller } from "../auth/middleware";
import { createSessionToken } from "../auth/session-token";
import { findSession, insertSession, revokeSession } from "../db/sessions";
import { AppError } from "../errors";
import { isId, newId } from "../ids";
import { readJson } from "../http/json-body";
import { seedInbox } from "../services/inbox/seed-inbox";
import { cleanFileName } from "../names";
import { parseDestination } from "../platforms";
import { byteCount, destination, mediaType } from "../services/validation";

const mintBody = z
  .object({
    destinations: z.array(destination).max(50).optional(),
    quotaBytes: byteCount.optional(),
    ttlSeconds: z.number().int("must be a whole number").positive("must be positive").optional(),
    /** The end user the session works for: sessions with the same owner share dedup. */
    owner: z
      .string()
      .min(1, "must not be empty")
      .max(200, "must be at most 200 characters")
      .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces")
      .optional(),
  })
  .strict();

/** Operator routes: mint and revoke sandbox sessions. */
export const sessions = new Hono<AppEnv>()
  .use(requireCaller("operator"))
  .post("/", async (c) => {
    const body = await readJson(c, mintBody);
    const { config } = c.var.deps;
    const ttlSeconds = body.ttlSeconds ?? config.sessionTtlSeconds;
    if (ttlSeconds > config.maxSessionTtlSeconds) {
      throw new AppError(
        "invalid_request",
        `ttlSeconds: must be at most ${config.maxSessionTtlSeconds}`,
      );
    }
    // A chat on a platform this relay has no bot for would fail only at the first send.
    for (const to of body.destinations ?? []) {
      const platform = parseDestination(to)?.platform;
      if (platform && !c.var.deps.platforms[platform])
        throw new AppError(
          "platform_not_configured",
          `${platform} is not configured on this relay`,
        );
    }
    const now = c.var.deps.now();
    const id = newId("ses");
    const owner = body.owner ?? null;
    const session = {
      id,
      owner,
      destinations: [...new Set(body.destinations ?? [])],
      quotaBytes: body.quotaBytes ?? config.sessionQuotaBytes,
      createdAt: now,
      expiresAt: now + ttlSeconds * 1000,
    };
    await insertSession(c.var.deps.db, session);
    const token = await createSessionToken(config.signingKey, {
      sessionId: session.id,
      expiresAtMs: session.expiresAt,
    });
    return c.json(
      {
        sessionId: session.id,
        token,
        expiresAt: new Date(session.expiresAt).toISOString(),
        destinations: session.destinations,
        quotaBytes: session.quotaBytes,
        ...(owner === null ? {} : { owner }),
      },
      201,
    );
  })
  .post("/:id/inbox", async (c) => {
    const { deps } = c.var;
    const session = await findSession(deps.db, c.req.param("id"));
    if (!session || session.revokedAt !== null || session.expiresAt <= deps.now())
      throw new AppError("session_not_found");
    // The operator passes names it got from people: cleaned by the name rule, never refused.
    const name = cleanFileName(c.req.query("name") ?? "", "file");
    const size = Number(c.req.header("content-length"));
    if (!c.req.header("content-length") || !Number.isSafeInteger(size) || size < 0)
      throw new AppError("length_required");
    if (size > deps.config.maxFileBytes) throw new AppError("file_too_large");
    const record = await seedInbox(
      deps,
      session.id,
      {
        name,
        size,
        contentType:
          mediaType.safeParse(c.req.header("content-type")).data ?? "application/octet-stream",
        body: c.req.raw.body ?? new Blob([]).stream(),
      },
      new URL(c.req.url).origin,
    );
    return c.json(record, 201);
  })
  .delete("/:id", async (c) => {
    const id = c.req.param("id");
    const revokedAt = isId("ses", id)
      ? await revokeSession(c.var.deps.db, id, c.var.deps.now())
      : null;
    if (revokedAt === null) throw new AppError("session_not_found");
    return c.json({ sessionId: id, revokedAt: new Date(revokedAt).toISOString() });
  });
