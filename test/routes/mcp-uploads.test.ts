import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { createUploadToken, uploadNonce } from "../../src/mcp/transfer-tokens";
import { backends } from "../support/backends";
import { randomBytes } from "../support/bytes";
import { errorOf, ORIGIN, RelayClient } from "../support/relay-client";

/** The largest file here: small, so a body over it is cheap. */
const MAX_FILE_BYTES = 2_000_000;

for (const backend of backends()) {
  describe(`PUT /mcp/uploads/:token on ${backend.name}`, () => {
    const client = new RelayClient({ ...backend.env, MAX_FILE_BYTES: String(MAX_FILE_BYTES) });
    const { signingKey } = readConfig(client.env);

    it("cuts off a chunked body as soon as it runs past MAX_FILE_BYTES, keeping nothing", async () => {
      const { sessionId, token } = await client.mintSession();
      const grant = { sessionId, name: "big.bin", expiresAt: Date.now() + 60_000 };
      const upload = await createUploadToken(signingKey, { ...grant, nonce: uploadNonce() });
      const response = await client.fetch(`${ORIGIN}/mcp/uploads/${upload}`, {
        method: "PUT",
        body: new Blob([randomBytes(MAX_FILE_BYTES + 500_000)]).stream(),
      });
      expect(await errorOf(response)).toEqual({
        status: 413,
        code: "payload_too_large",
        message: `the file ran past ${MAX_FILE_BYTES} bytes, the most this upload URL takes; nothing was kept`,
      });
      const files = await client.call("GET", "/v1/files", { token });
      expect(await files.json()).toEqual({ files: [] });
      if (backend.name === "r2") {
        expect((await env.BUCKET.list({ prefix: "staging/" })).objects).toEqual([]);
      }
    });
  });
}
