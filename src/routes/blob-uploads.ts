import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { verifyRelayUploadUrl } from "../auth/upload-url";
import { receiveUpload } from "../services/receive-upload";

/** The relay's own signed upload URLs, for stores clients cannot reach (R2). */
export const blobUploads = new Hono<AppEnv>().put("/:id", async (c) => {
  const { deps } = c.var;
  const id = c.req.param("id");
  await verifyRelayUploadUrl(
    deps.config.signingKey,
    id,
    c.req.query("exp"),
    c.req.query("sig"),
    deps.now(),
  );
  await receiveUpload(deps, id, {
    contentLength: c.req.header("content-length"),
    checksum: c.req.header("x-amz-checksum-sha256"),
    body: c.req.raw.body,
  });
  c.header("x-amz-checksum-sha256", c.req.header("x-amz-checksum-sha256"));
  return c.body(null, 200);
});
