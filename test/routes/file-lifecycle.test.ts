import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createShareToken } from "../../src/auth/share-link";
import { randomBytes, sha256Hex } from "../support/bytes";
import { ADMIN_TOKEN, errorOf, RelayClient } from "../support/relay-client";
import { upload } from "../support/send";

const client = new RelayClient(env);
const signingKey = "test-signing-key-0123456789abcdef";

async function sent(bytes = randomBytes(5000), name = "data.bin") {
  const { token } = await client.mintSession();
  return { token, file: await upload(client, token, bytes, name), bytes };
}

async function mintLink(token: string, fileId: string, body: unknown): Promise<Response> {
  return client.call("POST", `/v1/files/${fileId}/links`, { token, json: body });
}

describe("DELETE /v1/files/:id", () => {
  it("deletes the sandbox's own file; its links then answer 410 file_deleted", async () => {
    const { token, file } = await sent();
    const limited = (await (await mintLink(token, file.fileId, { maxDownloads: 3 })).json()) as {
      url: string;
    };
    const response = await client.call("DELETE", `/v1/files/${file.fileId}`, { token });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { fileId: string; deletedAt: string };
    expect(body.fileId).toBe(file.fileId);
    expect(Date.parse(body.deletedAt)).toBeGreaterThan(0);

    for (const url of [file.url, limited.url]) {
      expect(await errorOf(await client.fetch(url))).toMatchObject({
        status: 410,
        code: "file_deleted",
      });
    }
    const page = await client.fetch(file.url, { headers: { accept: "text/html" } });
    expect(page.status).toBe(410);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(
      await errorOf(await client.call("GET", `/v1/files/${file.fileId}`, { token })),
    ).toMatchObject({ status: 404, code: "file_not_found" });
    expect(
      await errorOf(await client.call("DELETE", `/v1/files/${file.fileId}`, { token })),
    ).toMatchObject({ status: 404, code: "file_not_found" });
    const list = (await (await client.call("GET", "/v1/files", { token })).json()) as {
      files: unknown[];
    };
    expect(list.files).toEqual([]);
  });

  it("refuses another session's file as missing; the operator may delete any", async () => {
    const { file } = await sent();
    const other = await client.mintSession();
    expect(
      await errorOf(
        await client.call("DELETE", `/v1/files/${file.fileId}`, { token: other.token }),
      ),
    ).toMatchObject({ status: 404, code: "file_not_found" });
    const response = await client.call("DELETE", `/v1/files/${file.fileId}`, {
      token: ADMIN_TOKEN,
    });
    expect(response.status).toBe(200);
  });

  it("takes a deleted file out of its scope's reach: the same content sent again travels", async () => {
    const { token, file, bytes } = await sent();
    await client.call("DELETE", `/v1/files/${file.fileId}`, { token });
    const again = await upload(client, token, bytes, "again.bin");
    expect(again.uploadedBytes).toBe(bytes.byteLength);
    expect(again.deduped).toBe(false);
    const response = await client.fetch(again.url);
    expect(await sha256Hex(await response.arrayBuffer())).toBe(file.sha256);
  });
});

describe("POST /v1/files/:id/links", () => {
  it("mints a link with its own TTL and no limit by default", async () => {
    const { token, file } = await sent();
    const before = Date.now();
    const response = await mintLink(token, file.fileId, { ttlSeconds: 600 });
    expect(response.status).toBe(201);
    const link = (await response.json()) as {
      url: string;
      expiresAt: string;
      maxDownloads: number | null;
    };
    expect(link.maxDownloads).toBeNull();
    const expiresAt = Date.parse(link.expiresAt);
    expect(expiresAt).toBeGreaterThan(before + 598_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 600_000);
    expect(link.url).toMatch(/\/d\/fil_[\w-]{22}\.\d+\.lnk_[\w-]{22}\.[\w-]{43}$/);
    for (let i = 0; i < 3; i++) expect((await client.fetch(link.url)).status).toBe(200);
  });

  it("refuses a TTL beyond the file's remaining life, and bad bodies", async () => {
    const { token, file } = await sent();
    const remaining = Math.ceil((Date.parse(file.expiresAt) - Date.now()) / 1000);
    expect(
      await errorOf(await mintLink(token, file.fileId, { ttlSeconds: remaining + 60 })),
    ).toMatchObject({ status: 400, code: "invalid_request" });
    for (const body of [{ ttlSeconds: 0 }, { maxDownloads: -1 }, { maxDownloads: 1.5 }, { x: 1 }])
      expect(await errorOf(await mintLink(token, file.fileId, body))).toMatchObject({
        status: 400,
        code: "invalid_request",
      });
    const other = await client.mintSession();
    expect(await errorOf(await mintLink(other.token, file.fileId, {}))).toMatchObject({
      status: 404,
      code: "file_not_found",
    });
  });

  it("meters the bytes sent and answers 410 link_exhausted once maxDownloads × size went out", async () => {
    const { token, file, bytes } = await sent(randomBytes(10_000));
    const link = (await (await mintLink(token, file.fileId, { maxDownloads: 2 })).json()) as {
      url: string;
      maxDownloads: number;
    };
    expect(link.maxDownloads).toBe(2);
    // Free: HEAD, the browser page (no preview for random bytes), a 304. Counted: every
    // byte sent, here 5000 + 10000 + 5000 = 2 × 10000.
    expect((await client.fetch(link.url, { method: "HEAD" })).status).toBe(200);
    const fresh = await client.fetch(link.url, { headers: { accept: "text/html" } });
    expect(fresh.status).toBe(200);
    expect(await fresh.text()).toContain("<dt>Downloads left</dt><dd>2 of 2</dd>");
    expect(
      (await client.fetch(link.url, { headers: { "if-none-match": `"${file.sha256}"` } })).status,
    ).toBe(304);
    expect((await client.fetch(link.url, { headers: { range: "bytes=5000-" } })).status).toBe(206);
    const whole = await client.fetch(link.url);
    expect(whole.status).toBe(200);
    expect(new Uint8Array(await whole.arrayBuffer())).toEqual(bytes);
    const first = await client.fetch(link.url, { headers: { range: "bytes=0-4999" } });
    expect(first.status).toBe(206);
    await first.arrayBuffer();

    expect(await errorOf(await client.fetch(link.url))).toMatchObject({
      status: 410,
      code: "link_exhausted",
    });
    expect((await client.fetch(`${link.url}?download=1`, { method: "HEAD" })).status).toBe(410);
    const page = await client.fetch(link.url, { headers: { accept: "text/html" } });
    expect(page.status).toBe(410);
    expect(await page.text()).toContain("This link has been used up");
    // Not a byte more, from any offset.
    const rest = await client.fetch(link.url, { headers: { range: "bytes=5000-" } });
    expect(await errorOf(rest)).toMatchObject({ status: 410, code: "link_exhausted" });
    // The file's own link is not limited.
    expect((await client.fetch(file.url)).status).toBe(200);
  });

  it("never lets concurrent downloads exceed the limit", async () => {
    const { token, file } = await sent(randomBytes(100));
    const link = (await (await mintLink(token, file.fileId, { maxDownloads: 3 })).json()) as {
      url: string;
    };
    const statuses = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const response = await client.fetch(link.url);
        await response.arrayBuffer();
        return response.status;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 410)).toHaveLength(5);
  });

  it("refuses a tampered link id and a signed id that was never minted", async () => {
    const { token, file } = await sent();
    const link = (await (await mintLink(token, file.fileId, { maxDownloads: 1 })).json()) as {
      url: string;
    };
    // Dropping the link id (to escape its limit) breaks the signature.
    const [fileId, exp, , signature] = link.url.split("/d/")[1]!.split(".");
    const stripped = link.url.replace(/\/d\/.*/, `/d/${fileId}.${exp}.${signature}`);
    expect(await errorOf(await client.fetch(stripped))).toMatchObject({
      status: 403,
      code: "invalid_link",
    });
    const unknown = await createShareToken(
      signingKey,
      file.fileId,
      Date.now() + 60_000,
      "lnk_AAAAAAAAAAAAAAAAAAAAAA",
    );
    expect(await errorOf(await client.call("GET", `/d/${unknown}`))).toMatchObject({
      status: 403,
      code: "invalid_link",
    });
  });
});
