import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../support/bytes";
import { startRelay, type RunningRelay } from "../support/relay";
import { callTool, curl, itemsOf, mcpClient, seed, sha256 } from "./relay-support";

/** A JSON-RPC `initialize`: what any MCP processing would answer 200 to. */
const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
});

/**
 * Who may use `/mcp` and the URLs it hands out, and for how long: bearer auth before any MCP
 * processing, the operator refused, download URLs that expire (a 2-second lifetime here).
 */
describe("POST /mcp auth and URL lifetimes (r2)", () => {
  let relay: RunningRelay;
  let dir: string;

  beforeAll(async () => {
    relay = await startRelay({ vars: { MCP_DOWNLOAD_TTL_SECONDS: "2" } });
    dir = await mkdtemp(join(tmpdir(), "airlock-mcp-auth-"));
  });
  afterAll(async () => {
    await relay?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  function post(authorization: string | undefined, method = "POST") {
    return fetch(`${relay.url}/mcp`, {
      method,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(authorization ? { authorization } : {}),
      },
      body: method === "POST" ? INITIALIZE : undefined,
    });
  }

  async function refusal(response: Response) {
    return { status: response.status, body: (await response.json()) as unknown };
  }

  it("answers a missing, wrong, expired or revoked token with 401 before any MCP processing", async () => {
    const expiring = await relay.mintSession({ ttlSeconds: 1 });
    const revoked = await relay.mintSession();
    const gone = await fetch(`${relay.url}/v1/sessions/${revoked.sessionId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${relay.adminToken}` },
    });
    expect(gone.status).toBe(200);
    const cases: [string | undefined, string, string][] = [
      [undefined, "unauthorized", "missing or malformed Authorization header"],
      ["Bearer not-a-token", "invalid_token", "token is invalid or expired"],
      [`Bearer ${revoked.token}`, "session_revoked", "session has been revoked"],
    ];
    for (const [authorization, code, message] of cases) {
      const response = await post(authorization);
      expect(response.headers.get("www-authenticate")).toBe('Bearer realm="airlock"');
      expect(await refusal(response)).toEqual({ status: 401, body: { error: { code, message } } });
    }
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, Date.parse(expiring.expiresAt) - Date.now()) + 50),
    );
    const expired = await post(`Bearer ${expiring.token}`);
    expect(expired.headers.get("www-authenticate")).toBe('Bearer realm="airlock"');
    expect(await refusal(expired)).toEqual({
      status: 401,
      body: { error: { code: "invalid_token", message: "token is invalid or expired" } },
    });
    await expect(mcpClient(relay, revoked.token)).rejects.toMatchObject({
      code: 401,
      message: expect.stringMatching(/session_revoked/),
    });
  });

  it("refuses the operator token", async () => {
    expect(await refusal(await post(`Bearer ${relay.adminToken}`))).toEqual({
      status: 403,
      body: {
        error: {
          code: "forbidden",
          message:
            "the operator token is refused on /mcp: use a session token (a model never holds admin power)",
        },
      },
    });
  });

  it("answers GET and DELETE with 405: a stateless server has no stream and no session", async () => {
    const { token } = await relay.mintSession();
    for (const method of ["GET", "DELETE"]) {
      const response = await post(`Bearer ${token}`, method);
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
    }
    const initialized = await post(`Bearer ${token}`);
    expect(initialized.status).toBe(200);
    expect(initialized.headers.get("mcp-session-id")).toBeNull();
  });

  it("lets a download URL expire, and a fresh one from receive_files work", async () => {
    const session = await relay.mintSession();
    const client = await mcpClient(relay, session.token);
    try {
      const bytes = randomBytes(10_000);
      await seed(relay, session.sessionId, "late.bin", bytes);
      const asked = Date.now();
      const [item] = itemsOf(await callTool(client, "receive_files"));
      // Rounded up to the token's whole seconds: a URL lives at least its TTL.
      expect(Date.parse(item!.expiresAt)).toBeGreaterThanOrEqual(asked + 2000);
      const wait = Date.parse(item!.expiresAt) - Date.now();
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait) + 50));
      const late = await curl(["--fail-with-body", "-sS", item!.downloadUrl], dir);
      expect(late.code).toBe(22);
      expect(JSON.parse(late.stdout)).toEqual({
        error: {
          code: "link_expired",
          message: "this download URL has expired; call receive_files again for a fresh one",
        },
      });
      const [again] = itemsOf(await callTool(client, "receive_files"));
      expect(again?.itemId).toBe(item!.itemId);
      const fresh = await fetch(again!.downloadUrl);
      expect(sha256(new Uint8Array(await fresh.arrayBuffer()))).toBe(sha256(bytes));

      // Another signature, and another spelling of the same one (its last character's low
      // bits are padding): neither is the URL the relay wrote.
      const url = again!.downloadUrl;
      const at = url.length - 20;
      const forged = url.slice(0, at) + (url[at] === "A" ? "B" : "A") + url.slice(at + 1);
      const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
      const respelled = url.slice(0, -1) + alphabet[alphabet.indexOf(url.at(-1)!) ^ 1];
      for (const wrong of [forged, respelled]) {
        expect(await refusal(await fetch(wrong))).toEqual({
          status: 404,
          body: { error: { code: "not_found", message: "no such download URL" } },
        });
      }
    } finally {
      await client.close();
    }
  });

  it("an upload URL stops working when its session is revoked", async () => {
    const session = await relay.mintSession();
    const client = await mcpClient(relay, session.token);
    const created = await callTool(client, "create_upload", { name: "x.bin" });
    await client.close();
    const { url } = created.structuredContent as { url: string };
    await fetch(`${relay.url}/v1/sessions/${session.sessionId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${relay.adminToken}` },
    });
    await writeFile(join(dir, "x.bin"), randomBytes(1000));
    const put = await curl(["--fail-with-body", "-sS", "-T", "x.bin", url], dir);
    expect(JSON.parse(put.stdout)).toEqual({
      error: {
        code: "upload_expired",
        message: "this upload URL no longer works: its session has ended",
      },
    });
  });
});
