import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createShareToken } from "../../src/auth/share-link";
import { logText, randomBytes, sha256Hex } from "../support/bytes";
import { ADMIN_TOKEN, errorOf, ORIGIN, RelayClient } from "../support/relay-client";
import { upload } from "../support/send";

const client = new RelayClient(env);
const signingKey = "test-signing-key-0123456789abcdef";

async function sent(bytes: Uint8Array, name: string, encoding: "identity" | "gzip" = "identity") {
  const { token } = await client.mintSession();
  return upload(client, token, bytes, name, encoding);
}

describe("GET /d/:token", () => {
  it("serves the original bytes with length, ETag, disposition and safe headers", async () => {
    const bytes = randomBytes(70_000);
    const file = await sent(bytes, "report.pdf");
    const response = await client.fetch(file.url);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe("70000");
    expect(response.headers.get("etag")).toBe(`"${file.sha256}"`);
    expect(response.headers.get("accept-ranges")).toBe("bytes");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("content-disposition")).toBe(
      `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`,
    );
    expect(await sha256Hex(await response.arrayBuffer())).toBe(await sha256Hex(bytes));
  });

  it("names non-ASCII files with RFC 6266 filename* and an ASCII fallback", async () => {
    const file = await sent(randomBytes(10), 'résumé "final" ✓.txt');
    const header = (await client.fetch(file.url)).headers.get("content-disposition");
    expect(header).toBe(
      `attachment; filename="r_sum_ _final_ _.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22%20%E2%9C%93.txt`,
    );
  });

  for (const encoding of ["identity", "gzip"] as const) {
    it(`answers Range requests with 206 and the exact slice (${encoding})`, async () => {
      const bytes = encoding === "gzip" ? logText(30_000) : randomBytes(200_000);
      const file = await sent(bytes, "slice.bin", encoding);
      for (const [header, start, end] of [
        ["bytes=0-0", 0, 0],
        ["bytes=1000-69999", 1000, 69_999],
        [`bytes=${bytes.byteLength - 10}-`, bytes.byteLength - 10, bytes.byteLength - 1],
        ["bytes=-100", bytes.byteLength - 100, bytes.byteLength - 1],
      ] as const) {
        const response = await client.fetch(file.url, { headers: { range: header } });
        expect(response.status).toBe(206);
        expect(response.headers.get("content-range")).toBe(
          `bytes ${start}-${end}/${bytes.byteLength}`,
        );
        expect(response.headers.get("content-length")).toBe(String(end - start + 1));
        expect(new Uint8Array(await response.arrayBuffer())).toEqual(
          bytes.subarray(start, end + 1),
        );
      }
    });
  }

  it("answers an unsatisfiable range with 416 and the size", async () => {
    const file = await sent(randomBytes(100), "small.bin");
    const response = await client.fetch(file.url, { headers: { range: "bytes=100-" } });
    expect(response.status).toBe(416);
    expect(response.headers.get("content-range")).toBe("bytes */100");
  });

  it("answers HEAD with the headers and no body, and If-None-Match with 304", async () => {
    const file = await sent(randomBytes(1234), "head.bin");
    const head = await client.fetch(file.url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("1234");
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    const cached = await client.fetch(file.url, {
      headers: { "if-none-match": `"${file.sha256}"` },
    });
    expect(cached.status).toBe(304);
  });

  it("refuses a tampered link with 403 invalid_link", async () => {
    const file = await sent(randomBytes(10), "a.bin");
    const token = file.url.split("/d/")[1]!;
    const [id, exp, sig] = token.split(".");
    for (const forged of [
      `${id}.${Number(exp) + 1000}.${sig}`,
      `${id}.${exp}.${sig!.replace(/^./, (c) => (c === "A" ? "B" : "A"))}`,
      "garbage",
    ]) {
      expect(await errorOf(await client.fetch(`${ORIGIN}/d/${forged}`))).toMatchObject({
        status: 403,
        code: "invalid_link",
      });
    }
  });

  it("refuses an expired link with 410 link_expired", async () => {
    const file = await sent(randomBytes(10), "old.bin");
    const expired = await createShareToken(signingKey, file.fileId, Date.now() - 1000);
    expect(await errorOf(await client.fetch(`${ORIGIN}/d/${expired}`))).toMatchObject({
      status: 410,
      code: "link_expired",
    });
  });

  it("gives links that expire with LINK_TTL_SECONDS, never after the file", async () => {
    const short = new RelayClient({ ...env, LINK_TTL_SECONDS: "60" });
    const { token } = await short.mintSession();
    const file = await upload(short, token, randomBytes(10), "a.bin");
    const linkExpiry = Number(file.url.split(".").at(-2)) * 1000;
    expect(linkExpiry - Date.now()).toBeLessThanOrEqual(60_000);
    expect(linkExpiry - Date.now()).toBeGreaterThan(50_000);
  });

  it("lets the operator read any file's content", async () => {
    const bytes = randomBytes(500);
    const file = await sent(bytes, "op.bin");
    const response = await client.call("GET", `/v1/files/${file.fileId}/content`, {
      token: ADMIN_TOKEN,
    });
    expect(await sha256Hex(await response.arrayBuffer())).toBe(await sha256Hex(bytes));
  });
});

/** Signature spellings that decode to the same bytes as `sig` (43 base64url chars: 2 spare bits). */
function sameBytesSpellings(sig: string): string[] {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const last = alphabet.indexOf(sig.at(-1)!);
  return [0, 1, 2, 3]
    .map((low) => `${sig.slice(0, -1)}${alphabet[(last & ~3) | low]}`)
    .filter((spelling) => spelling !== sig);
}

describe("GET /d/:token signatures", () => {
  it("accepts only the canonical base64url spelling of the signature", async () => {
    const file = await sent(randomBytes(10), "canon.bin");
    const token = file.url.split("/d/")[1]!;
    const [id, exp, sig] = token.split(".") as [string, string, string];
    expect((await client.fetch(file.url)).status).toBe(200);
    const others = sameBytesSpellings(sig);
    expect(others).toHaveLength(3);
    for (const spelling of others)
      expect(await errorOf(await client.fetch(`${ORIGIN}/d/${id}.${exp}.${spelling}`))).toEqual({
        status: 403,
        code: "invalid_link",
        message: "share link is invalid",
      });
  });
});

const BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8";

describe("GET /d/:token of a pending file", () => {
  it("serves the bytes without an ETag, never 304, and the page shows no SHA-256", async () => {
    const bytes = randomBytes(3000);
    const file = await sent(bytes, "pending.bin");
    await env.DB.prepare("UPDATE files SET verified = 0 WHERE id = ?").bind(file.fileId).run();
    const response = await client.fetch(file.url, {
      headers: { "if-none-match": `"${file.sha256}"` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("etag")).toBeNull();
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);
    const star = await client.fetch(file.url, { headers: { "if-none-match": "*" } });
    expect(star.status).toBe(200);
    await star.arrayBuffer();
    // An If-Range naming the claimed hash does not hold: the whole file, not a slice.
    const ranged = await client.fetch(file.url, {
      headers: { range: "bytes=10-", "if-range": `"${file.sha256}"` },
    });
    expect(ranged.status).toBe(200);
    await ranged.arrayBuffer();
    const content = await client.call("GET", `/v1/files/${file.fileId}/content`, {
      token: ADMIN_TOKEN,
    });
    expect(content.headers.get("etag")).toBeNull();
    await content.arrayBuffer();
    const html = await (await client.fetch(file.url, { headers: { accept: BROWSER } })).text();
    expect(html).not.toContain(file.sha256);
    expect(html).toContain("Still being checked");
  });
});
