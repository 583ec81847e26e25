import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { findArchiveListing } from "../../src/db/archive-listings";
import { findFileIncludingDeleted } from "../../src/db/files";
import { listTar, TAR_LIMITS } from "../../src/services/sharing/tar-listing";
import { humanSize } from "../../src/services/human-size";
import { gzip, randomBytes } from "../support/bytes";
import { client, encode, listArchive, page, sent, tar } from "./share-page-harness";

/** The share page's archive listings, and the tar reader behind them. */
describe("the share page (browsers)", () => {
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
