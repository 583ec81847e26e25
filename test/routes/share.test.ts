import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createShareToken } from "../../src/auth/share-link";
import { logText, randomBytes, sha256Hex, TINY_PNG } from "../support/bytes";
import { bytesServed } from "../support/link-usage";
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

interface Limited {
  url: string;
  bytes: Uint8Array;
  fileId: string;
  sha256: string;
}

async function limitedLink(
  bytes: Uint8Array,
  name: string,
  maxDownloads: number,
): Promise<Limited> {
  const { token } = await client.mintSession();
  const file = await upload(client, token, bytes, name);
  const response = await client.call("POST", `/v1/files/${file.fileId}/links`, {
    token,
    json: { maxDownloads },
  });
  expect(response.status).toBe(201);
  const { url } = (await response.json()) as { url: string };
  return { url, bytes, fileId: file.fileId, sha256: file.sha256 };
}

const BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8";

describe("GET /d/:token with maxDownloads (metered in bytes)", () => {
  it("counts ranges at any offset and suffixes; once n × size went out, nothing comes through", async () => {
    const link = await limitedLink(randomBytes(10_000), "metered.bin", 1);
    let received = 0;
    const from1 = await client.fetch(link.url, { headers: { range: "bytes=1-" } });
    expect(from1.status).toBe(206);
    received += (await from1.arrayBuffer()).byteLength;
    const suffix = await client.fetch(link.url, { headers: { range: "bytes=-1" } });
    expect(suffix.status).toBe(206);
    received += (await suffix.arrayBuffer()).byteLength;
    expect(received).toBe(10_000);
    expect(await bytesServed(link.url)).toBe(10_000);

    const attempts: [string, RequestInit][] = [
      ["", {}],
      ["", { headers: { range: "bytes=0-0" } }],
      ["", { headers: { range: "bytes=5000-" } }],
      ["", { headers: { range: "bytes=-1" } }],
      ["", { method: "HEAD" }],
      ["", { headers: { "if-none-match": `"${link.sha256}"` } }],
      ["?inline=1", {}],
      ["?download=1", {}],
      ["?download=1", { method: "HEAD" }],
    ];
    for (const [query, init] of attempts) {
      const response = await client.fetch(`${link.url}${query}`, init);
      expect(response.status).toBe(410);
      if (init.method !== "HEAD")
        expect(await errorOf(response)).toMatchObject({ code: "link_exhausted" });
    }
    const page = await client.fetch(link.url, { headers: { accept: BROWSER } });
    expect(page.status).toBe(410);
    expect(await page.text()).toContain("This link has been used up");
    expect(await bytesServed(link.url)).toBe(10_000);
  });

  it("never lets concurrent ranges overdraw: 20 × 1000 bytes on a 10 000-byte budget", async () => {
    const link = await limitedLink(randomBytes(10_000), "race.bin", 1);
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const offset = (i % 10) * 1000;
        const response = await client.fetch(link.url, {
          headers: { range: `bytes=${offset}-${offset + 999}` },
        });
        return { status: response.status, length: (await response.arrayBuffer()).byteLength };
      }),
    );
    expect(results.filter((r) => r.status === 206)).toHaveLength(10);
    expect(results.filter((r) => r.status === 410)).toHaveLength(10);
    expect(results.filter((r) => r.status === 206).reduce((total, r) => total + r.length, 0)).toBe(
      10_000,
    );
  });

  it("lets a download cut short resume with Range on a one-download link, and then no more", async () => {
    const bytes = randomBytes(2 * 1024 * 1024);
    const link = await limitedLink(bytes, "resume.bin", 1);
    const first = await client.fetch(link.url);
    expect(first.status).toBe(200);
    const reader = first.body!.getReader();
    const kept: Uint8Array[] = [];
    let have = 0;
    while (have < 256 * 1024) {
      const { value } = await reader.read();
      kept.push(value!);
      have += value!.byteLength;
    }
    await reader.cancel();
    // The refund runs when the relay sees the transfer end.
    for (let i = 0; i < 100 && (await bytesServed(link.url)) >= bytes.byteLength; i++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await bytesServed(link.url)).toBeLessThan(bytes.byteLength);

    const rest = await client.fetch(link.url, {
      headers: { range: `bytes=${have}-`, "if-range": `"${link.sha256}"` },
    });
    expect(rest.status).toBe(206);
    const tail = new Uint8Array(await rest.arrayBuffer());
    const whole = new Uint8Array(bytes.byteLength);
    let offset = 0;
    for (const chunk of [...kept, tail]) {
      whole.set(chunk, offset);
      offset += chunk.byteLength;
    }
    expect(offset).toBe(bytes.byteLength);
    expect(await sha256Hex(whole)).toBe(await sha256Hex(bytes));
    expect(await bytesServed(link.url)).toBeLessThanOrEqual(bytes.byteLength);
    expect((await client.fetch(link.url, { headers: { range: "bytes=0-" } })).status).toBe(410);
  });

  it("shows no preview on a one-download link, refuses ?inline=1, and Download still works", async () => {
    for (const [name, bytes] of [
      ["pixel.png", TINY_PNG],
      ["notes.txt", new TextEncoder().encode("hello, one download\n")],
    ] as const) {
      const link = await limitedLink(bytes, name, 1);
      for (let i = 0; i < 3; i++) {
        const page = await client.fetch(link.url, { headers: { accept: BROWSER } });
        expect(page.status).toBe(200);
        const html = await page.text();
        expect(html).toContain("<dt>Downloads left</dt><dd>1 of 1</dd>");
        expect(html).toContain("No preview: this link allows a set number of downloads");
        expect(html).not.toMatch(/<img|<pre/);
      }
      const inline = await client.fetch(`${link.url}?inline=1`);
      if (name === "pixel.png")
        expect(await errorOf(inline)).toEqual({
          status: 410,
          code: "link_exhausted",
          message: "share link has no room for a preview: what is left is kept for a download",
        });
      else await inline.arrayBuffer(); // not previewable inline: an ordinary download
      if (name === "notes.txt") {
        expect(inline.status).toBe(200);
        continue;
      }
      const download = await client.fetch(`${link.url}?download=1`);
      expect(download.status).toBe(200);
      expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
      expect((await client.fetch(link.url, { headers: { accept: BROWSER } })).status).toBe(410);
    }
  });

  it("previews on a link with room, counts the preview, and always keeps one download", async () => {
    const link = await limitedLink(TINY_PNG, "pixel.png", 2);
    const page = await (await client.fetch(link.url, { headers: { accept: BROWSER } })).text();
    expect(page).toContain('<img src="?inline=1"');
    const preview = await client.fetch(`${link.url}?inline=1`);
    expect(preview.status).toBe(200);
    expect(new Uint8Array(await preview.arrayBuffer())).toEqual(TINY_PNG);
    expect(await bytesServed(link.url)).toBe(TINY_PNG.byteLength);
    // One download's worth is left: no more previews, the page says so, the download works.
    const again = await (await client.fetch(link.url, { headers: { accept: BROWSER } })).text();
    expect(again).toContain("<dt>Downloads left</dt><dd>1 of 2</dd>");
    expect(again).not.toContain("<img");
    expect((await client.fetch(`${link.url}?inline=1`)).status).toBe(410);
    const download = await client.fetch(`${link.url}?download=1`);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(TINY_PNG);
    expect((await client.fetch(`${link.url}?inline=1`)).status).toBe(410);
    expect((await client.fetch(link.url)).status).toBe(410);
  });

  it("counts the page's text sample, while a download still fits after it", async () => {
    const text = new TextEncoder().encode("line\n".repeat(100));
    const link = await limitedLink(text, "short.txt", 3);
    const views: string[] = [];
    for (let i = 0; i < 4; i++)
      views.push(await (await client.fetch(link.url, { headers: { accept: BROWSER } })).text());
    // Two samples fit beside one download; the third and fourth views show none.
    expect(views.map((html) => html.includes("<pre"))).toEqual([true, true, false, false]);
    expect(await bytesServed(link.url)).toBe(2 * text.byteLength);
    const download = await client.fetch(`${link.url}?download=1`);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(text);
    expect((await client.fetch(link.url, { headers: { accept: BROWSER } })).status).toBe(410);
  });

  it("counts an empty file's answers one each", async () => {
    const link = await limitedLink(new Uint8Array(0), "empty.txt", 2);
    expect((await client.fetch(link.url)).status).toBe(200);
    expect((await client.fetch(link.url)).status).toBe(200);
    expect(await errorOf(await client.fetch(link.url))).toMatchObject({
      status: 410,
      code: "link_exhausted",
    });
  });
});

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
