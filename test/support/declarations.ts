import { createHash } from "node:crypto";

/** The body of `POST /v1/uploads` for `bytes` sent as they are (identity), under `name`. */
export function identityDeclaration(bytes: Uint8Array, name = "x.bin") {
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const size = bytes.byteLength;
  return { name, size, sha256, encoding: "identity", storedSize: size, storedSha256: sha256 };
}
