import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { verifyRelayPartUrl, verifyRelayUploadUrl } from "../auth/upload-url";
import { receivePart, receiveUpload, type IncomingPut } from "../services/uploads/receive-upload";

/** The relay's own signed upload URLs, for stores clients cannot reach (R2). */
export const blobUploads = new Hono<AppEnv>()
  .put("/:id/parts/:part", async (c) => {
    const { deps } = c.var;
    const id = c.req.param("id");
    const part = c.req.param("part");
    await verifyRelayPartUrl(
      deps.config.signingKey,
      id,
      part,
      c.req.query("exp"),
      c.req.query("sig"),
      deps.now(),
    );
    await receivePart(deps, id, Number(part), incomingPut(c.req.raw));
    c.header("x-amz-checksum-sha256", c.req.header("x-amz-checksum-sha256"));
    return c.body(null, 200);
  })
  .put("/:id", async (c) => {
    const { deps } = c.var;
    const id = c.req.param("id");
    await verifyRelayUploadUrl(
      deps.config.signingKey,
      id,
      c.req.query("exp"),
      c.req.query("sig"),
      deps.now(),
    );
    await receiveUpload(deps, id, incomingPut(c.req.raw));
    c.header("x-amz-checksum-sha256", c.req.header("x-amz-checksum-sha256"));
    return c.body(null, 200);
  });

function incomingPut(request: Request): IncomingPut {
  return {
    contentLength: request.headers.get("content-length") ?? undefined,
    checksum: request.headers.get("x-amz-checksum-sha256") ?? undefined,
    body: request.body,
  };
}
