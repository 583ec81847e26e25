import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { createBlobStore } from "../../src/storage";
import { errorOf, RelayClient } from "../support/relay-client";

const client = new RelayClient({ ...env, MAX_FILE_BYTES: "1000000" });
const sha = "a".repeat(64);
const valid = { name: "report.pdf", size: 10, sha256: sha };

async function listStored(): Promise<string[]> {
  return (await env.BUCKET.list()).objects.map((o) => o.key);
}

describe("POST /v1/uploads refuses bad input before any byte moves", () => {
  it("returns 400 invalid_json for a malformed body", async () => {
    const { token } = await client.mintSession();
    const response = await client.call("POST", "/v1/uploads", {
      token,
      body: "{not json",
      headers: { "content-type": "application/json" },
    });
    expect(await errorOf(response)).toMatchObject({ status: 400, code: "invalid_json" });
  });

  it("returns 415 for a body that is not JSON", async () => {
    const { token } = await client.mintSession();
    const response = await client.call("POST", "/v1/uploads", {
      token,
      body: "name=x",
      headers: { "content-type": "text/plain" },
    });
    expect(await errorOf(response)).toMatchObject({ status: 415, code: "unsupported_media_type" });
  });

  it.each([
    ["a missing name", { size: 10, sha256: sha }, "name"],
    ["a missing sha256", { name: "a", size: 10 }, "sha256"],
    ["a negative size", { ...valid, size: -1 }, "size"],
    ["a fractional size", { ...valid, size: 1.5 }, "size"],
    ["a size beyond 2^53", { ...valid, size: 2 ** 60 }, "size"],
    ["an upper-case sha256", { ...valid, sha256: "A".repeat(64) }, "sha256"],
    ["a name with /", { ...valid, name: "../etc/passwd" }, "name"],
    ["a name with a backslash", { ...valid, name: "..\\win.ini" }, "name"],
    ['the name ".."', { ...valid, name: ".." }, "name"],
    ["a name with NUL", { ...valid, name: "a\u0000b" }, "name"],
    ["a name with a newline", { ...valid, name: "a\r\nX-Evil: 1" }, "name"],
    ["an empty name", { ...valid, name: "" }, "name"],
    ["a 256-byte name", { ...valid, name: "é".repeat(128) }, "name"],
    [
      "an unknown encoding",
      { ...valid, encoding: "br", storedSize: 10, storedSha256: sha },
      "encoding",
    ],
    ["half the stored fields", { ...valid, encoding: "gzip" }, "go together"],
    [
      "identity with a different stored hash",
      { ...valid, encoding: "identity", storedSize: 10, storedSha256: "b".repeat(64) },
      "identity",
    ],
    ["a content type with CRLF", { ...valid, contentType: "text/plain\r\nX: y" }, "contentType"],
    ["an unknown field", { ...valid, path: "/etc" }, "path"],
  ])("returns 400 invalid_request for %s", async (_, body, hint) => {
    const { token } = await client.mintSession();
    const refused = await errorOf(await client.call("POST", "/v1/uploads", { token, json: body }));
    expect(refused).toMatchObject({ status: 400, code: "invalid_request" });
    expect(refused.message).toContain(hint);
  });

  it("returns 413 file_too_large over MAX_FILE_BYTES and stores nothing", async () => {
    const { token } = await client.mintSession();
    const before = await listStored();
    const body = {
      ...valid,
      size: 1_000_001,
      encoding: "identity",
      storedSize: 1_000_001,
      storedSha256: sha,
    };
    expect(
      await errorOf(await client.call("POST", "/v1/uploads", { token, json: body })),
    ).toMatchObject({
      status: 413,
      code: "file_too_large",
    });
    expect(await listStored()).toEqual(before);
  });

  it("returns 413 over RELAY_UPLOAD_MAX_BYTES on a store the relay fronts, before any byte moves", async () => {
    const capped = new RelayClient({ ...env, RELAY_UPLOAD_MAX_BYTES: "1000" });
    const { token } = await capped.mintSession();
    const over = {
      ...valid,
      size: 1001,
      encoding: "identity",
      storedSize: 1001,
      storedSha256: sha,
    };
    const refused = await errorOf(await capped.call("POST", "/v1/uploads", { token, json: over }));
    expect(refused).toMatchObject({ status: 413, code: "file_too_large" });
    expect(refused.message).toContain("RELAY_UPLOAD_MAX_BYTES");
    const under = {
      ...valid,
      size: 1000,
      encoding: "identity",
      storedSize: 1000,
      storedSha256: sha,
    };
    expect((await capped.call("POST", "/v1/uploads", { token, json: under })).status).toBe(201);
  });

  it("returns 401 for a request without a token", async () => {
    expect(await errorOf(await client.call("POST", "/v1/uploads", { json: valid }))).toMatchObject({
      status: 401,
      code: "unauthorized",
    });
  });

  it("returns 403 when the operator tries to upload as a sandbox", async () => {
    const response = await client.call("POST", "/v1/uploads", {
      token: "test-admin-token",
      json: valid,
    });
    expect(await errorOf(response)).toMatchObject({ status: 403, code: "forbidden" });
  });
});

describe("relay-signed upload URLs", () => {
  it("refuse an unsigned or re-signed PUT with 403", async () => {
    const response = await client.fetch(
      "http://relay.test/v1/blob-uploads/upl_AAAAAAAAAAAAAAAAAAAAAA?exp=9999999999&sig=abc",
      {
        method: "PUT",
        body: "x",
      },
    );
    expect(await errorOf(response)).toMatchObject({ status: 403, code: "forbidden" });
  });
});

describe("unknown routes and errors", () => {
  it("answers 404 not_found as JSON", async () => {
    expect(await errorOf(await client.call("GET", "/nope"))).toMatchObject({
      status: 404,
      code: "not_found",
    });
  });

  it("reports a misconfigured relay as 500 misconfigured, naming the setting", async () => {
    const broken = new RelayClient({ ...env, AIRLOCK_SIGNING_KEY: "short" });
    const refused = await errorOf(await broken.call("GET", "/v1/files", { token: "x" }));
    expect(refused).toMatchObject({ status: 500, code: "misconfigured" });
    expect(refused.message).toContain("AIRLOCK_SIGNING_KEY");
  });

  it("reads the s3 settings only when STORAGE=s3", () => {
    expect(() => readConfig({ ...env, STORAGE: "s3" })).toThrow("S3_ENDPOINT is not set");
    expect(createBlobStore(readConfig(env), env).kind).toBe("r2");
  });
});

describe("JSON bodies are capped before they are read", () => {
  it("answers 413 payload_too_large to a Content-Length over 1 MiB without waiting for the body", async () => {
    const { token } = await client.mintSession();
    let sent = false;
    const stalled = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return new Promise(() => {});
        sent = true;
        controller.enqueue(new TextEncoder().encode('{"name":"'));
      },
    });
    const response = await client.call("POST", "/v1/uploads", {
      token,
      body: stalled,
      headers: { "content-type": "application/json", "content-length": String(50 * 1024 * 1024) },
    });
    expect(await errorOf(response)).toEqual({
      status: 413,
      code: "payload_too_large",
      message: "request body is larger than 1048576 bytes",
    });
  });

  it("stops reading a chunked body at 1 MiB and stores nothing", async () => {
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM sessions").first<{
      n: number;
    }>();
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 65_536;
        controller.enqueue(new Uint8Array(65_536).fill(0x20));
      },
    });
    const response = await client.call("POST", "/v1/sessions", {
      token: "test-admin-token",
      body: endless,
      headers: { "content-type": "application/json" },
    });
    expect(await errorOf(response)).toMatchObject({ status: 413, code: "payload_too_large" });
    expect(pulled).toBeLessThan(2 * 1024 * 1024);
    const after = await env.DB.prepare("SELECT COUNT(*) AS n FROM sessions").first<{ n: number }>();
    expect(after?.n).toBe(before?.n);
  });

  it("still reads a body just under the cap", async () => {
    const { token } = await client.mintSession();
    const padded = JSON.stringify({ name: "a.txt", size: 1, sha256: sha }).replace(
      "{",
      `{${" ".repeat(1024 * 1024 - 200)}`,
    );
    const response = await client.call("POST", "/v1/uploads", {
      token,
      body: padded,
      headers: { "content-type": "application/json" },
    });
    expect(response.status).not.toBe(413);
  });
});
