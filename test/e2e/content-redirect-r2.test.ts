import { createHash, randomFillSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AirlockClient } from "../../sdk/src/node";
import type { RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";

// The r2 counterpart of content-redirect.test.ts: there is no store URL to send a client to.

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe("GET /v1/files/:id/content on r2 (wrangler dev)", () => {
  let relay: RunningRelay;
  beforeAll(async () => {
    relay = sharedRelay();
  });
  afterAll(async () => {
    await relay?.stop();
  });

  it("streams the bytes itself: 200, no redirect", async () => {
    const operator = new AirlockClient({ url: relay.url, adminToken: relay.adminToken });
    const { sessionId, token } = await relay.mintSession();
    const bytes = randomFillSync(Buffer.alloc(100_000));
    const item = await operator.seedInbox(sessionId, bytes, { name: "r2.bin" });
    const answer = await fetch(`${relay.url}/v1/files/${item.file.fileId}/content`, {
      headers: bearer(token),
      redirect: "manual",
    });
    expect(answer.status).toBe(200);
    expect(sha256(new Uint8Array(await answer.arrayBuffer()))).toBe(sha256(bytes));
  });
});
