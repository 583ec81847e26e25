import { createHash } from "node:crypto";
import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { requireCaller } from "../auth/middleware";
import { findSession } from "../db/sessions";
import { AppError } from "../errors";
import { cleanFileName } from "../names";
import { toFileRecord } from "../services/file-record";
import { ingest } from "../services/inbox/ingest";
import { mediaType } from "../services/validation";

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Passes bytes through while hashing them, and errors at the end when they are not `want`:
 * the store's write then fails and nothing is kept.
 */
function expectSha256(want: string): {
  transform: TransformStream<Uint8Array, Uint8Array>;
  mismatched: () => boolean;
} {
  const hash = createHash("sha256");
  let mismatched = false;
  const transform = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      hash.update(chunk);
      controller.enqueue(chunk);
    },
    flush(controller) {
      if (hash.digest("hex") !== want) {
        mismatched = true;
        controller.error(new Error("content does not match the declared SHA-256"));
      }
    },
  });
  return { transform, mismatched: () => mismatched };
}

/**
 * Operator route: stores bytes the operator collected from a session's sandbox (over its exec
 * channel, when the sandbox has no network) as a file of that session, as if the sandbox had
 * sent it: it can then get share links and be delivered. Not an inbox item.
 */
export const sessionFiles = new Hono<AppEnv>()
  .use(requireCaller("operator"))
  .post("/:id/files", async (c) => {
    const { deps } = c.var;
    const session = await findSession(deps.db, c.req.param("id"));
    if (!session || session.revokedAt !== null || session.expiresAt <= deps.now())
      throw new AppError("session_not_found");
    // Names come from files in a sandbox: cleaned by the name rule, never refused.
    const name = cleanFileName(c.req.query("name") ?? "", "file");
    const declared = c.req.query("sha256");
    if (declared !== undefined && !SHA256_HEX.test(declared))
      throw new AppError("invalid_request", "sha256: must be 64 lowercase hex digits");
    const size = Number(c.req.header("content-length"));
    if (!c.req.header("content-length") || !Number.isSafeInteger(size) || size < 0)
      throw new AppError("length_required");
    const check = declared === undefined ? null : expectSha256(declared);
    const raw = c.req.raw.body ?? new Blob([]).stream();
    let file;
    try {
      file = await ingest(deps, {
        sessionId: session.id,
        name,
        size,
        contentType:
          mediaType.safeParse(c.req.header("content-type")).data ?? "application/octet-stream",
        body: check ? raw.pipeThrough(check.transform) : raw,
        origin: "sandbox",
      });
    } catch (error) {
      if (check?.mismatched())
        throw new AppError(
          "content_mismatch",
          "the bytes received are not the declared sha256; nothing was kept",
        );
      throw error;
    }
    return c.json(await toFileRecord(deps, file, new URL(c.req.url).origin), 201);
  });
