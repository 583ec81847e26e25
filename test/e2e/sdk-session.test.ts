import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AirlockClient, AirlockError, AirlockSession, type FetchLike } from "../../sdk/src/node";
import { freePort } from "../support/free-port";
import { rejectionOf } from "../support/rejection";
import { airlock, dir, relay, shimSend, useSdkSuite, MiB } from "./sdk-support";

describe("the operator SDK against the relay under wrangler dev", () => {
  useSdkSuite();

  it("creates a session and revokes it: its token then gets 401 session_revoked as an AirlockError", async () => {
    const grant = await airlock.createSession({ quotaBytes: 10 * MiB, ttlSeconds: 600 });
    expect(grant).toMatchObject({
      sessionId: expect.stringMatching(/^ses_/),
      token: expect.any(String),
      destinations: [],
      quotaBytes: 10 * MiB,
    });
    const expiresIn = Date.parse(grant.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(590_000);
    expect(expiresIn).toBeLessThanOrEqual(600_000);

    const sandbox = airlock.asSession(grant.token);
    expect(sandbox).toBeInstanceOf(AirlockSession);
    expect(await sandbox.listFiles()).toEqual([]);
    expect(await sandbox.inbox()).toEqual([]);

    const revoked = await airlock.revokeSession(grant.sessionId);
    expect(revoked.sessionId).toBe(grant.sessionId);
    expect(Math.abs(Date.parse(revoked.revokedAt) - Date.now())).toBeLessThan(60_000);

    const refused = await rejectionOf<AirlockError>(sandbox.listFiles());
    expect(refused).toBeInstanceOf(AirlockError);
    expect(refused).toBeInstanceOf(Error);
    expect(refused).toMatchObject({
      name: "AirlockError",
      status: 401,
      code: "session_revoked",
      message: "session has been revoked",
    });
    // The same through the constructor's `token` option.
    const viaOption = new AirlockClient({ url: relay.url, token: grant.token }).asSession();
    expect(await rejectionOf<AirlockError>(viaOption.inbox())).toMatchObject({
      status: 401,
      code: "session_revoked",
    });

    expect(
      await rejectionOf<AirlockError>(airlock.revokeSession("ses_AAAAAAAAAAAAAAAAAAAAAA")),
    ).toMatchObject({
      status: 404,
      code: "session_not_found",
    });
  });

  it("a chat on a platform this relay lacks is refused at mint: 400 platform_not_configured", async () => {
    // The shared relay has no chat platform configured.
    expect(
      await rejectionOf<AirlockError>(airlock.createSession({ destinations: ["telegram:-1001"] })),
    ).toMatchObject({
      status: 400,
      code: "platform_not_configured",
      message: "telegram is not configured on this relay",
    });
  });

  it("delivering to an unbound destination is a 403 destination_not_allowed AirlockError; deliveries are listed", async () => {
    const { token } = await airlock.createSession();
    await writeFile(join(dir, "chart.bin"), randomBytes(1000));
    const [sent] = await shimSend(token, join(dir, "chart.bin"));
    const sandbox = airlock.asSession(token);
    const refused = await rejectionOf<AirlockError>(
      sandbox.deliver(sent!.fileId, { to: "telegram:43", caption: "hi", idempotencyKey: "k-1" }),
    );
    expect(refused).toBeInstanceOf(AirlockError);
    expect(refused).toMatchObject({
      status: 403,
      code: "destination_not_allowed",
      message: "this session may not deliver to telegram:43",
    });
    expect(
      await rejectionOf<AirlockError>(sandbox.deliver(sent!.fileId, { to: "email:bob" })),
    ).toMatchObject({
      status: 400,
      code: "invalid_request",
    });
    expect(await airlock.listDeliveries(sent!.fileId)).toEqual([]);
    expect(await sandbox.listDeliveries(sent!.fileId)).toEqual([]);
  });

  it("errors carry the relay's code and message; credentials are never mixed up", async () => {
    expect(await rejectionOf<AirlockError>(airlock.getFile("fil_nope"))).toMatchObject({
      status: 404,
      code: "file_not_found",
      message: "no such file",
    });
    const wrong = new AirlockClient({ url: relay.url, adminToken: "not-the-admin-token" });
    expect(await rejectionOf<AirlockError>(wrong.createSession())).toMatchObject({
      status: 401,
      code: "invalid_token",
    });
    expect(
      await rejectionOf<AirlockError>(airlock.createSession({ ttlSeconds: 365 * 86400 })),
    ).toMatchObject({
      status: 400,
      code: "invalid_request",
      message: expect.stringContaining("ttlSeconds"),
    });
    // A session token may not act as the operator.
    const { token } = await airlock.createSession();
    const confused = new AirlockClient({ url: relay.url, adminToken: token });
    expect(await rejectionOf<AirlockError>(confused.createSession())).toMatchObject({
      status: 403,
      code: "forbidden",
    });
    // Operator calls without an admin token fail before any request.
    const noAdmin = new AirlockClient({ url: relay.url, token });
    await expect(noAdmin.createSession()).rejects.toThrow(/adminToken/);
    await expect(noAdmin.listFiles()).rejects.toThrow(TypeError);
    expect(() => new AirlockClient({ url: relay.url }).asSession()).toThrow(/session token/);
    expect(() => new AirlockClient({ url: "not a url" })).toThrow(TypeError);
  });

  it("wraps network errors with their cause, retries GETs after 429/5xx, never POSTs", async () => {
    const closed = new AirlockClient({
      url: `http://127.0.0.1:${await freePort()}`,
      adminToken: relay.adminToken,
      retries: 1,
    });
    const down = await rejectionOf<AirlockError>(closed.listFiles());
    expect(down).toBeInstanceOf(AirlockError);
    expect(down).toMatchObject({ status: 0, code: "network_error" });
    expect(down.message).toMatch(/^GET \/v1\/files: request failed: .*ECONNREFUSED/);
    expect(down.cause).toBeInstanceOf(Error);

    const calls: string[] = [];
    /** Statuses to answer with before passing requests through to the relay. */
    let refusals: number[] = [503, 429];
    const flaky: FetchLike = async (url, init) => {
      calls.push(`${init.method} ${new URL(url).pathname}`);
      const status = refusals.shift();
      if (status === undefined) return fetch(url, init);
      return new Response(
        JSON.stringify({ error: { code: "storage_unavailable", message: "try later" } }),
        { status, headers: { "retry-after": "0" } },
      );
    };
    const client = new AirlockClient({
      url: relay.url,
      adminToken: relay.adminToken,
      fetch: flaky,
    });
    expect(Array.isArray(await client.listFiles())).toBe(true);
    expect(calls).toEqual(["GET /v1/files", "GET /v1/files", "GET /v1/files"]);

    // Out of retries (2 by default): the last refusal is the error.
    calls.length = 0;
    refusals = [503, 503, 502];
    expect(await rejectionOf<AirlockError>(client.getFile("fil_x"))).toMatchObject({ status: 502 });
    expect(calls).toHaveLength(3);

    calls.length = 0;
    refusals = [503];
    expect(await rejectionOf<AirlockError>(client.createSession())).toMatchObject({
      status: 503,
      code: "storage_unavailable",
      message: "try later",
    });
    expect(calls).toEqual(["POST /v1/sessions"]);

    // An answer that is not the relay's JSON (a proxy's error page).
    const proxy = new AirlockClient({
      url: relay.url,
      adminToken: relay.adminToken,
      retries: 0,
      fetch: async () => new Response("<html>Bad Gateway</html>", { status: 502 }),
    });
    expect(await rejectionOf<AirlockError>(proxy.listFiles())).toMatchObject({
      status: 502,
      code: "invalid_response",
      message: "GET /v1/files: HTTP 502 <html>Bad Gateway</html>",
    });

    const aborted = await rejectionOf<AirlockError>(
      airlock.listFiles({ signal: AbortSignal.abort() }),
    );
    expect(aborted).not.toBeInstanceOf(AirlockError);
    expect((aborted as unknown as Error).name).toBe("AbortError");
  });
});
