import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { AppError } from "../errors";
import { readJson } from "../http/json-body";
import { endWithNewline } from "../http/newline-answer";
import { linkErrorPage, uploadPage } from "../http/upload-page/pages";
import {
  completeLinkUpload,
  linkUploadState,
  receiveLinkPart,
  startBody,
  startLinkUpload,
} from "../services/upload-links/browser";
import { putToLink } from "../services/upload-links/put";
import { openLink } from "../services/upload-links/upload-requests";

/** Errors a person opening a link sees as a page rather than JSON. */
const PAGE_ERRORS = new Set(["not_found", "link_exhausted", "link_expired"]);

/**
 * Upload links, for whoever holds one: the page (`GET`), a plain `PUT` of the file (`curl -T`,
 * to the link or to the link plus the file's name), and the page's own multipart API under
 * `/u/:token/uploads`. The token is the credential.
 */
export const uploadLinks = new Hono<AppEnv>()
  .get("/:token", async (c) => {
    try {
      const token = c.req.param("token");
      const { request } = await openLink(c.var.deps, token);
      return await uploadPage(request, `${new URL(c.req.url).origin}/u/${token}`);
    } catch (error) {
      if (error instanceof AppError && PAGE_ERRORS.has(error.code)) return linkErrorPage(error);
      throw error;
    }
  })
  // `curl -T report.csv <link>/report.csv`, or `<link>/` (curl then adds the file's name): the
  // name in the path, as transfer.sh takes it; `?name=` and the request's hint are the fallbacks.
  .on("PUT", ["/:token", "/:token/", "/:token/:name"], endWithNewline, async (c) => {
    const raw = c.req.raw;
    const result = await putToLink(c.var.deps, c.req.param("token"), {
      contentLength: raw.headers.get("content-length") ?? undefined,
      contentType: raw.headers.get("content-type") ?? undefined,
      name: c.req.param("name") || c.req.query("name"),
      body: raw.body,
    });
    return c.json(result, 201);
  })
  .post("/:token/uploads", async (c) => {
    const body = await readJson(c, startBody);
    return c.json(await startLinkUpload(c.var.deps, c.req.param("token"), body), 201);
  })
  .get("/:token/uploads/:id", async (c) => {
    const { token, id } = c.req.param();
    return c.json(await linkUploadState(c.var.deps, token, id));
  })
  .put("/:token/uploads/:id/parts/:part", async (c) => {
    const { token, id, part } = c.req.param();
    if (!/^\d{1,5}$/.test(part)) throw new AppError("invalid_request", "part must be a number");
    const raw = c.req.raw;
    await receiveLinkPart(
      c.var.deps,
      token,
      id,
      Number(part),
      {
        contentLength: raw.headers.get("content-length") ?? undefined,
        checksum: raw.headers.get("x-amz-checksum-sha256") ?? undefined,
        body: raw.body,
      },
      new URL(c.req.url).origin,
    );
    return c.body(null, 204);
  })
  .post("/:token/uploads/:id/complete", async (c) => {
    const origin = new URL(c.req.url).origin;
    const { token, id } = c.req.param();
    return c.json(await completeLinkUpload(c.var.deps, token, id, origin));
  });
