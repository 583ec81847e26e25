import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createShareToken } from "../../src/auth/share-link";
import { setupFor } from "../../src/app";
import { findArchiveListing } from "../../src/db/archive-listings";
import { findFileIncludingDeleted } from "../../src/db/files";
import { recordArchiveListing } from "../../src/services/sharing/archive-listing";
import { listTar, TAR_LIMITS } from "../../src/services/sharing/tar-listing";
import { humanSize } from "../../src/services/human-size";
import type { FileRecord } from "../../src/services/file-record";
import { gzip, logText, randomBytes, sha256Hex, TINY_PNG } from "../support/bytes";
import { depsAt } from "../support/deps";
import { errorOf, ORIGIN, RelayClient } from "../support/relay-client";
import {
  complete,
  declare,
  describe as describeBytes,
  putBytes,
  type UploadAnswer,
} from "../support/send";

const client = new RelayClient(env);
const signingKey = "test-signing-key-0123456789abcdef";
const BROWSER_ACCEPT =
  "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
const encode = (text: string) => new TextEncoder().encode(text);

/** Sends `bytes` through the whole upload path, declaring `contentType` as a client may. */
async function sent(bytes: Uint8Array, name: string, contentType?: string): Promise<FileRecord> {
  const { token } = await client.mintSession();
  const { declared, stored } = await describeBytes(bytes, name);
  const answer = (await (
    await declare(client, token, { ...declared, contentType })
  ).json()) as UploadAnswer;
  if (answer.status === "deduped") return answer.file;
  if (answer.status !== "upload") throw new Error(`unexpected answer ${JSON.stringify(answer)}`);
  expect((await putBytes(client, answer.put, stored)).ok).toBe(true);
  const done = await complete(client, token, answer.uploadId);
  expect(done.status).toBe(201);
  return done.json();
}

/** What the verification consumer does for an archive: list it once into D1. */
async function listArchive(file: FileRecord): Promise<void> {
  const row = await findFileIncludingDeleted(env.DB, file.fileId);
  await recordArchiveListing(depsAt(env, setupFor(env).store, Date.now()), row!);
}

function browse(url: string, init: RequestInit = {}): Promise<Response> {
  return client.fetch(url, { ...init, headers: { accept: BROWSER_ACCEPT, ...init.headers } });
}

async function page(url: string): Promise<string> {
  const response = await browse(url);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
  return response.text();
}

/** A ustar archive of the given entries, with the contents as described. */
function tar(
  entries: { name: string; size?: number; type?: string; link?: string; prefix?: string }[],
): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (const entry of entries) {
    const header = new Uint8Array(512);
    const put = (offset: number, text: string) => header.set(encode(text), offset);
    const size = entry.size ?? 0;
    put(0, entry.name);
    put(100, "0000644\0");
    put(108, "0000000\0");
    put(116, "0000000\0");
    put(124, `${size.toString(8).padStart(11, "0")}\0`);
    put(136, "00000000000\0");
    put(148, "        ");
    put(156, entry.type ?? "0");
    put(157, entry.link ?? "");
    put(257, "ustar\u000000");
    put(345, entry.prefix ?? "");
    const sum = header.reduce((total, byte) => total + byte, 0);
    put(148, `${sum.toString(8).padStart(6, "0")}\0 `);
    blocks.push(header, new Uint8Array(Math.ceil(size / 512) * 512).fill(0x61));
  }
  blocks.push(new Uint8Array(1024));
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.byteLength, 0));
  let offset = 0;
  for (const block of blocks) {
    out.set(block, offset);
    offset += block.byteLength;
  }
  return out;
}

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

  it("lists the entries of a .tar.gz and of a plain .tar", async () => {
    const archive = tar([
      { name: "project/", type: "5" },
      { name: "project/README.md", size: 1234 },
      { name: "project/<b>bold</b>.txt", size: 5 },
      { name: "project/latest", type: "2", link: "README.md" },
      { name: "file.bin", prefix: "deep/".repeat(20).slice(0, 99), size: 70_000 },
    ]);
    for (const [name, bytes] of [
      ["project.tar.gz", await gzip(archive)],
      ["project.tar", archive],
    ] as const) {
      const file = await sent(bytes, name);
      await listArchive(file);
      await listArchive(file); // idempotent
      const html = await page(file.url);
      expect(html).toContain("Archive with 5 entries.");
      expect(html).toContain('<td>project/</td><td class="num"></td><td>directory</td>');
      // Files link to their own download (`?entry=N`, N their place in the listing).
      expect(html).toContain(
        '<td><a href="?entry=1" download>project/README.md</a></td><td class="num">1.2 KiB</td><td>file</td>',
      );
      expect(html).toContain(
        '<td><a href="?entry=2" download>project/&lt;b&gt;bold&lt;/b&gt;.txt</a></td>',
      );
      expect(html).toContain("<td>project/latest</td>");
      expect(html).toContain("<td>symlink → README.md</td>");
      expect(html).toContain(
        `<td><a href="?entry=4" download>${"deep/".repeat(20).slice(0, 99)}/file.bin</a></td><td class="num">${humanSize(70_000)}</td>`,
      );
      expect(html).toContain('<a class="button" href="?zip=1" download="project.zip">');
    }
  });

  it("says when a listing stops at the entry limit", async () => {
    const entries = Array.from({ length: TAR_LIMITS.entries + 5 }, (_, i) => ({ name: `f${i}` }));
    const file = await sent(await gzip(tar(entries)), "many.tgz");
    await listArchive(file);
    const html = await page(file.url);
    expect(html).toContain(`Archive with ${TAR_LIMITS.entries}+ entries.`);
    expect(html).toContain(`Only the first ${TAR_LIMITS.entries} entries are listed.`);
    expect(html.match(/<tr><td>/g)).toHaveLength(TAR_LIMITS.entries);
  });

  it("never reads an archive on a page view: no stored listing, a line saying so", async () => {
    client.holdVerification();
    const file = await sent(await gzip(tar([{ name: "a.txt", size: 3 }])), "later.tar.gz");
    client.queued.splice(0); // its listing job has not run yet
    client.resumeVerification();
    const html = await page(file.url);
    expect(html).toContain("The list of files in this archive is not available.");
    expect(html).not.toContain("<table>");
    expect(
      await findArchiveListing(
        env.DB,
        (await findFileIncludingDeleted(env.DB, file.fileId))!.storedKey,
      ),
    ).toBeNull();
    await env.DB.prepare("UPDATE files SET verified = 0 WHERE id = ?").bind(file.fileId).run();
    expect(await page(file.url)).toContain(
      "The list of files in this archive will show once the file has been checked.",
    );
  });

  it("lists a gzip bomb within its bounds, and the page shows that listing", async () => {
    // One entry declaring 1 GiB, then 256 MiB of zeros: about 256 KB once gzipped.
    const header = tar([{ name: "bomb.bin", size: 0 }])
      .subarray(0, 512)
      .slice();
    header.set(new TextEncoder().encode(`${(1024 ** 3).toString(8).padStart(11, "0")}\0`), 124);
    header.set(new TextEncoder().encode("        "), 148);
    const sum = header.reduce((total, byte) => total + byte, 0);
    header.set(new TextEncoder().encode(`${sum.toString(8).padStart(6, "0")}\0 `), 148);
    const zeros = new Uint8Array(1024 * 1024);
    const compressed = new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(header);
          for (let i = 0; i < 256; i++) controller.enqueue(zeros);
          controller.close();
        },
      }).pipeThrough(new CompressionStream("gzip")),
    ).arrayBuffer();
    const bomb = new Uint8Array(await compressed);
    expect(bomb.byteLength).toBeLessThan(1024 * 1024);
    const file = await sent(bomb, "bomb.tar.gz");
    await listArchive(file);
    const stored = await findArchiveListing(
      env.DB,
      (await findFileIncludingDeleted(env.DB, file.fileId))!.storedKey,
    );
    expect(stored?.listing).toEqual({
      entries: [{ name: "bomb.bin", size: 1024 ** 3, type: "file", offset: 512 }],
      stopped: "bytes",
    });
    const html = await page(file.url);
    expect(html).toContain("Archive with 1+ entry.");
    expect(html).toContain(
      `Listing stopped after reading ${humanSize(TAR_LIMITS.bytes)} of the archive.`,
    );
  }, 120_000); // gzipping 256 MiB to build the bomb is seconds of CPU on a busy machine

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

describe("listTar", () => {
  /** The bytes in 512-byte chunks, as an inflating stream would hand them over. */
  const stream = (bytes: Uint8Array) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.byteLength; offset += 512)
          controller.enqueue(bytes.slice(offset, offset + 512));
        controller.close();
      },
    });

  it("reads GNU long names and pax paths", async () => {
    const long = `${"x".repeat(150)}.txt`;
    const pax = `${String(`path=${long}\n`.length + 4)} path=${long}\n`;
    const archive = tar([
      { name: "././@LongLink", type: "L", size: long.length + 1 },
      { name: "short-gnu", size: 3 },
      { name: "PaxHeader", type: "x", size: encode(pax).byteLength },
      { name: "short-pax", size: 4 },
    ]);
    // The helper fills contents with "a": write the real long-name and pax records in.
    const bytes = archive.slice();
    bytes.set(encode(`${long}\0`), 512);
    // Headers and contents are 512 bytes each here: L, its name, short-gnu, its data, x.
    const paxAt = 512 * 5;
    bytes.set(encode(pax), paxAt);
    expect(await listTar(stream(bytes))).toEqual({
      entries: [
        { name: long, size: 3, type: "file", offset: 1536 },
        { name: long, size: 4, type: "file", offset: 3584 },
      ],
    });
  });

  it("takes an entry's size from its pax header over the ustar field", async () => {
    const pax = "13 size=1024\n";
    const bytes = tar([
      { name: "PaxHeader", type: "x", size: pax.length },
      { name: "big", size: 1024 },
      { name: "after" },
    ]).slice();
    bytes.set(encode(pax), 512);
    // The ustar size field of "big" says 0, as for a size ustar cannot hold.
    const header = bytes.subarray(1024, 1536);
    header.set(encode("00000000000\0"), 124);
    header.set(encode("        "), 148);
    const sum = header.reduce((total, byte) => total + byte, 0);
    header.set(encode(`${sum.toString(8).padStart(6, "0")}\0 `), 148);
    expect(await listTar(stream(bytes))).toEqual({
      entries: [
        { name: "big", size: 1024, type: "file", offset: 1536 },
        { name: "after", size: 0, type: "file", offset: 3072 },
      ],
    });
  });

  it("returns null for bytes that are not a tar and stops at the byte limit", async () => {
    expect(await listTar(stream(randomBytes(2048)))).toBeNull();
    const big = tar([{ name: "a", size: 3000 }, { name: "b", size: 3000 }, { name: "c" }]);
    expect(await listTar(stream(big), { entries: 10, bytes: 1024 })).toMatchObject({
      entries: [{ name: "a" }],
      stopped: "bytes",
    });
    expect(await listTar(stream(big.subarray(0, 1500)))).toMatchObject({
      entries: [{ name: "a" }],
      stopped: "corrupt",
    });
  });
});
