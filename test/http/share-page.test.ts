import { describe, expect, it } from "vitest";
import { createShareToken } from "../../src/auth/share-link";
import { humanSize } from "../../src/services/human-size";
import { logText, randomBytes, sha256Hex, TINY_PNG } from "../support/bytes";
import { errorOf, ORIGIN } from "../support/relay-client";
import {
  BROWSER_ACCEPT,
  browse,
  client,
  encode,
  page,
  sent,
  signingKey,
} from "./share-page-harness";

/** The share page a browser sees: previews by magic bytes, never rendering active content, headers and errors. */
describe("the share page (browsers)", () => {
  it("shows an image's name, size and an inline preview served as that image", async () => {
    const file = await sent(TINY_PNG, "pixel <1>.png", "image/png");
    const html = await page(file.url);
    expect(html).toContain("<h1>pixel &lt;1&gt;.png</h1>");
    expect(html).toContain(humanSize(TINY_PNG.byteLength));
    expect(html).toContain('<img src="?inline=1" alt="Preview of pixel &lt;1&gt;.png">');
    expect(html).toContain('<a class="button" href="?download=1" download="pixel &lt;1&gt;.png">');
    expect(html).toMatch(/<time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ">/);
    expect(html).toMatch(/\(in \d+ hours\)/);
    expect(html).toContain('<meta name="viewport"');

    const inline = await client.fetch(`${file.url}?inline=1`, { headers: { accept: "image/*" } });
    expect(inline.status).toBe(200);
    expect(inline.headers.get("content-type")).toBe("image/png");
    expect(inline.headers.get("content-disposition")).toMatch(/^inline; /);
    expect(inline.headers.get("x-content-type-options")).toBe("nosniff");
    expect(new Uint8Array(await inline.arrayBuffer())).toEqual(TINY_PNG);
  });

  it("decides by magic bytes: a PNG declared as octet-stream is previewed, a fake .png is not", async () => {
    const real = await sent(TINY_PNG, "no-type", "application/octet-stream");
    expect(await page(real.url)).toContain('<img src="?inline=1"');
    const fake = await sent(encode("<svg onload=alert(1)>"), "fake.png", "image/png");
    expect(await page(fake.url)).not.toContain("<img");
    const inline = await client.fetch(`${fake.url}?inline=1`);
    expect(inline.headers.get("content-disposition")).toMatch(/^attachment; /);
  });

  it("shows text escaped in a <pre>, and the first 64 KiB of a longer one with a note", async () => {
    const script = "<script>alert(1)</script>";
    const short = await sent(encode(`${script}\nsecond line & more\n`), "notes.txt", "text/plain");
    const shortHtml = await page(short.url);
    expect(shortHtml).toContain(
      '<pre tabindex="0">&lt;script&gt;alert(1)&lt;/script&gt;\nsecond line &amp; more\n</pre>',
    );
    expect(shortHtml).not.toContain("<script");
    expect(shortHtml).not.toContain("Truncated");

    const long = logText(2000);
    expect(long.byteLength).toBeGreaterThan(64 * 1024);
    const bytes = new Uint8Array([...encode(`${script}\n`), ...long]);
    const html = await page((await sent(bytes, "run.log")).url);
    expect(html).not.toContain("<script");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("Truncated");
    expect(html).toContain('<a href="?download=1" download>Download the whole file</a>');
    const pre = /<pre tabindex="0">([^<]*)<\/pre>/.exec(html)![1]!;
    const shown = pre.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
    expect(encode(shown).byteLength).toBe(64 * 1024);
    expect(new TextDecoder().decode(bytes).startsWith(shown)).toBe(true);
  });

  it("previews JSON and UTF-8 text whatever their declared type, never random bytes", async () => {
    const json = await sent(encode('{"ok": true, "emoji": "✓"}'), "data.json", "application/json");
    expect(await page(json.url)).toContain(
      "{&quot;ok&quot;: true, &quot;emoji&quot;: &quot;✓&quot;}",
    );
    const csv = await sent(encode("a,b\n1,2\n"), "table.csv", "application/octet-stream");
    expect(await page(csv.url)).toContain("a,b\n1,2\n</pre>");
    const binary = await page((await sent(randomBytes(5000), "blob.bin")).url);
    expect(binary).toContain("No preview for this type of file.");
    expect(binary).not.toContain("<pre");
  });

  for (const [name, contentType, source] of [
    ["page.html", "text/html", "<html><body><script>alert(document.cookie)</script></body></html>"],
    [
      "image.svg",
      "image/svg+xml",
      '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
    ],
    [
      "feed.xml",
      "application/xml",
      '<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>',
    ],
  ] as const) {
    it(`never renders or inlines ${name} (${contentType}): source text and attachments only`, async () => {
      const file = await sent(encode(source), name, contentType);
      const html = await page(file.url);
      expect(html).toContain("Shown as source text");
      expect(html).not.toMatch(/<(img|iframe|object|embed|video|audio|svg|script)\b/);
      expect(html).toMatch(/&lt;(x:)?script.*?&gt;alert\(/);
      for (const query of ["?inline=1", "?download=1", ""]) {
        const response = await client.fetch(`${file.url}${query}`, {
          headers: { accept: query === "" ? "*/*" : BROWSER_ACCEPT },
        });
        expect(response.status).toBe(200);
        expect(response.headers.get("content-disposition")).toMatch(/^attachment; /);
        expect(response.headers.get("content-security-policy")).toContain("sandbox");
        expect(response.headers.get("x-content-type-options")).toBe("nosniff");
        expect(await response.text()).toBe(source);
      }
    });
  }

  it("embeds PDF, video and audio with the browser's viewers, served inline by magic bytes", async () => {
    const cases = [
      [
        "doc.pdf",
        encode("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"),
        '<iframe src="?inline=1"',
        "application/pdf",
      ],
      [
        "clip.mp4",
        new Uint8Array([
          0,
          0,
          0,
          0x18,
          ...encode("ftypmp42"),
          0,
          0,
          0,
          0,
          ...encode("mp42isom"),
          0,
          0,
          0,
          8,
          ...encode("free"),
        ]),
        '<video controls preload="metadata" src="?inline=1"',
        "video/mp4",
      ],
      [
        "song.mp3",
        new Uint8Array([
          ...encode("ID3"),
          4,
          0,
          0,
          0,
          0,
          0,
          0,
          0xff,
          0xfb,
          0x90,
          0x64,
          ...new Uint8Array(400),
        ]),
        '<audio controls preload="metadata" src="?inline=1"',
        "audio/mpeg",
      ],
    ] as const;
    for (const [name, bytes, element, mime] of cases) {
      const file = await sent(bytes, name);
      expect(await page(file.url)).toContain(element);
      const inline = await client.fetch(`${file.url}?inline=1`, {
        headers: { range: "bytes=0-3" },
      });
      expect(inline.status).toBe(206);
      expect(inline.headers.get("content-type")).toBe(mime);
      expect(inline.headers.get("content-disposition")).toMatch(/^inline; /);
    }
  });

  it("sends a strict CSP whose only inline source is the page's stylesheet, by hash", async () => {
    const file = await sent(encode("hello"), "hello.txt");
    const response = await browse(file.url);
    const csp = response.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("script-src");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("base-uri 'none'");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("referrer-policy")).toBe("no-referrer");
    expect(response.headers.get("cache-control")).toBe("private, no-store");
    const html = await response.text();
    expect(html).not.toMatch(/<script|\son\w+=|javascript:/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    const hash = Uint8Array.from((await sha256Hex(encode(style))).match(/../g)!, (h) =>
      parseInt(h, 16),
    );
    expect(csp).toContain(`style-src 'sha256-${btoa(String.fromCharCode(...hash))}'`);
  });

  it("keeps serving the bytes to clients that do not ask for HTML, and to download links", async () => {
    const bytes = encode("<h1>not a page</h1>\n");
    const file = await sent(bytes, "raw.txt", "text/plain");
    for (const init of [
      {},
      { headers: { accept: "*/*" } },
      { headers: { accept: "application/json" } },
      { headers: { accept: "text/html;q=0" } },
    ]) {
      const response = await client.fetch(file.url, init);
      expect(response.headers.get("content-disposition")).toMatch(/^attachment; /);
      expect(response.headers.get("vary")).toBe("Accept");
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);
    }
    const download = await browse(`${file.url}?download=1`);
    expect(download.headers.get("content-type")).toBe("text/plain");
    expect(download.headers.get("content-disposition")).toMatch(/^attachment; /);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
    const ranged = await browse(file.url, { headers: { range: "bytes=1-2" } });
    expect(ranged.status).toBe(206);
    expect(await ranged.text()).toBe("h1");
  });

  it("answers browsers with an HTML error page of the same status, other clients with JSON", async () => {
    const file = await sent(encode("old"), "old.txt");
    const expired = `${ORIGIN}/d/${await createShareToken(signingKey, file.fileId, Date.now() - 1000)}`;
    const gone = await browse(expired);
    expect(gone.status).toBe(410);
    expect(gone.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(gone.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(await gone.text()).toContain("<h1>This link has expired</h1>");
    expect(await errorOf(await client.fetch(expired))).toMatchObject({
      status: 410,
      code: "link_expired",
    });

    const forged = await browse(`${ORIGIN}/d/fil_<script>`);
    expect(forged.status).toBe(403);
    expect(await forged.text()).toContain("<h1>This link is not valid</h1>");
    expect(await errorOf(await client.fetch(`${ORIGIN}/d/garbage`))).toMatchObject({
      status: 403,
      code: "invalid_link",
    });
  });

  it("shows an empty file as empty", async () => {
    expect(await page((await sent(new Uint8Array(0), "empty.txt")).url)).toContain(
      "This file is empty.",
    );
  });
});
