import { createHash } from "node:crypto";

/** `curl -T` to an upload link: the whole body in one PUT with its length. */
export function putToLink(url: string, body: Uint8Array): Promise<Response> {
  return fetch(url, {
    method: "PUT",
    body,
    headers: { "content-length": String(body.byteLength) },
  });
}

/** What the link's page sends to start an upload of `bytes` in one part. */
export function startLinkUpload(url: string, bytes: Uint8Array): Promise<Response> {
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  return fetch(`${url}/uploads`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "x.bin", size: bytes.byteLength, sha256, partSha256: [sha256] }),
  });
}
