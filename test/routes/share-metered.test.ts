import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { randomBytes, sha256Hex, TINY_PNG } from "../support/bytes";
import { bytesServed } from "../support/link-usage";
import { errorOf, RelayClient } from "../support/relay-client";
import { upload } from "../support/send";

const client = new RelayClient(env);

/** Share links with maxDownloads: every answer metered in bytes, previews included. */
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
