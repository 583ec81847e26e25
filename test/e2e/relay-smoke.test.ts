import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRelay, type RunningRelay } from "../support/relay";

describe("wrangler dev relay", () => {
  let relay: RunningRelay;
  beforeAll(async () => {
    relay = await startRelay();
  });
  afterAll(() => relay?.stop());

  it("answers /healthz and mints a session", async () => {
    expect((await fetch(`${relay.url}/healthz`)).status).toBe(200);
    const session = await relay.mintSession();
    expect(session.token).toMatch(/^ey/);
  });
});
