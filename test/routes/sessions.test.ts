import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { randomBytes } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { ADMIN_TOKEN, errorOf, RelayClient } from "../support/relay-client";
import { upload } from "../support/send";

/** Telegram, Discord and Slack configured (pointed at the fakes); WhatsApp not. */
const client = new RelayClient(new PlatformFakes().env(env));

describe("POST /v1/sessions", () => {
  it("mints a token bound to destinations, quota and lifetime", async () => {
    const response = await client.call("POST", "/v1/sessions", {
      token: ADMIN_TOKEN,
      json: { destinations: ["telegram:-100123", "slack:C0123"], quotaBytes: 1000, ttlSeconds: 60 },
    });
    expect(response.status).toBe(201);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      destinations: ["telegram:-100123", "slack:C0123"],
      quotaBytes: 1000,
    });
    const expiresIn = Date.parse(body.expiresAt as string) - Date.now();
    expect(expiresIn).toBeGreaterThan(55_000);
    expect(expiresIn).toBeLessThanOrEqual(60_000);
  });

  it("refuses a destination on a platform this relay has not configured: 400 platform_not_configured, nothing minted", async () => {
    const person = uniqueChatId();
    const refused = await errorOf(
      await client.call("POST", "/v1/sessions", {
        token: ADMIN_TOKEN,
        json: { destinations: ["telegram:-100123", `whatsapp:${person}`] },
      }),
    );
    expect(refused).toEqual({
      status: 400,
      code: "platform_not_configured",
      message: "whatsapp is not configured on this relay",
    });
    const minted = await env.DB.prepare(
      "SELECT count(*) AS n FROM sessions WHERE destinations LIKE ?",
    )
      .bind(`%${person}%`)
      .first<{ n: number }>();
    expect(minted?.n).toBe(0);
  });

  it("returns 401 without the admin token and 403 for a session token", async () => {
    expect(await errorOf(await client.call("POST", "/v1/sessions", { json: {} }))).toMatchObject({
      status: 401,
      code: "unauthorized",
    });
    expect(
      await errorOf(await client.call("POST", "/v1/sessions", { token: "wrong", json: {} })),
    ).toMatchObject({
      status: 401,
      code: "invalid_token",
    });
    const { token } = await client.mintSession();
    expect(
      await errorOf(await client.call("POST", "/v1/sessions", { token, json: {} })),
    ).toMatchObject({ status: 403, code: "forbidden" });
  });

  it.each([
    [{ destinations: ["email:bob"] }, "destinations.0"],
    [{ quotaBytes: -1 }, "quotaBytes"],
    [{ ttlSeconds: 0 }, "ttlSeconds"],
    [{ ttlSeconds: 365 * 86400 }, "ttlSeconds"],
    [{ extra: true }, "extra"],
  ])("returns 400 invalid_request for %j", async (body, field) => {
    const refused = await errorOf(
      await client.call("POST", "/v1/sessions", { token: ADMIN_TOKEN, json: body }),
    );
    expect(refused).toMatchObject({ status: 400, code: "invalid_request" });
    expect(refused.message).toContain(field);
  });
});

describe("DELETE /v1/sessions/:id", () => {
  it("revokes at once: the token's next request is refused with 401 session_revoked", async () => {
    const { sessionId, token } = await client.mintSession();
    expect((await client.call("GET", "/v1/files", { token })).status).toBe(200);
    const revoked = await client.call("DELETE", `/v1/sessions/${sessionId}`, {
      token: ADMIN_TOKEN,
    });
    expect(revoked.status).toBe(200);
    expect(await errorOf(await client.call("GET", "/v1/files", { token }))).toMatchObject({
      status: 401,
      code: "session_revoked",
    });
  });

  it("returns 404 for an unknown session", async () => {
    const response = await client.call("DELETE", "/v1/sessions/ses_AAAAAAAAAAAAAAAAAAAAAA", {
      token: ADMIN_TOKEN,
    });
    expect(await errorOf(response)).toMatchObject({ status: 404, code: "session_not_found" });
  });
});

describe("session tokens", () => {
  it("refuses a tampered token", async () => {
    const { token } = await client.mintSession();
    const [header, payload, signature] = token.split(".");
    const forged = `${header}.${payload}.${signature!.slice(0, -2)}AA`;
    expect(await errorOf(await client.call("GET", "/v1/files", { token: forged }))).toMatchObject({
      status: 401,
      code: "invalid_token",
    });
  });

  it("keeps each session's files to itself", async () => {
    const alice = await client.mintSession();
    const bob = await client.mintSession();
    const file = await upload(client, alice.token, randomBytes(100), "private.bin");
    expect(
      await errorOf(await client.call("GET", `/v1/files/${file.fileId}`, { token: bob.token })),
    ).toMatchObject({
      status: 404,
      code: "file_not_found",
    });
    const list = (await (await client.call("GET", "/v1/files", { token: bob.token })).json()) as {
      files: unknown[];
    };
    expect(list.files).toEqual([]);
    const operator = await client.call("GET", `/v1/files?sessionId=${alice.sessionId}`, {
      token: ADMIN_TOKEN,
    });
    expect(
      ((await operator.json()) as { files: { fileId: string }[] }).files.map((f) => f.fileId),
    ).toEqual([file.fileId]);
  });
});
