import { S3Http } from "../../src/storage/s3-http";
import type { StrictS3 } from "../fixtures/s3/strict-s3";
import {
  forward,
  passBack,
  startLoopbackServer,
  type LoopbackServer,
} from "../support/loopback-proxy";

export type IfRangeStore = LoopbackServer;

/**
 * Forwards everything to the strict S3 server (which checks every signature). A GET carrying an
 * `If-Range` the object's ETag does not match, once the store has authorised it, is answered
 * with the whole object, as AWS S3 does.
 */
export async function startIfRangeStore(s3: StrictS3): Promise<IfRangeStore> {
  const target = new URL(s3.endpoint);
  const direct = new S3Http(s3);
  return startLoopbackServer((req, res) => {
    const ifRange = req.headers["if-range"];
    const headers = { ...req.headers };
    delete headers["if-range"];
    forward(
      req,
      res,
      target,
      (answer) => {
        const etag = answer.headers.etag;
        if (typeof ifRange === "string" && answer.statusCode === 206 && ifRange !== etag) {
          answer.resume();
          const key = new URL(req.url!, s3.endpoint).pathname.slice(s3.bucket.length + 2);
          void direct
            .send("GET", decodeURIComponent(key))
            .then(async (whole) => {
              const body = Buffer.from(await whole.arrayBuffer());
              res.writeHead(200, { "content-length": body.byteLength, etag: etag ?? "" });
              res.end(body);
            })
            .catch(() => res.destroy());
          return;
        }
        passBack(answer, res);
      },
      headers,
    );
  });
}
