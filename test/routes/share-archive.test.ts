// An archive's share link gives one entry (`?entry=N`) or the whole as a zip (`?zip=1`), cut by
// the relay from the stored archive, on both backends: only clean entries are offered, a capped
// link is charged for what is sent, and an entry read costs what it serves.
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { findFileIncludingDeleted } from "../../src/db/files";
import { openEntry } from "../../src/services/sharing/archive-bytes";
import { findArchiveOffer } from "../../src/services/sharing/archive-offer";
import { createBlobStore, type BlobStore } from "../../src/storage";
import type { FileRecord, UploadAnswer } from "../../src/wire-types";
import { backends } from "../support/backends";
import { gzip, randomBytes, sha256Hex } from "../support/bytes";
import { depsAt } from "../support/deps";
import { concat, countingText, gzipMembers } from "../support/gzip-members";
import { bytesServed } from "../support/link-usage";
import { errorOf, RelayClient } from "../support/relay-client";
import { complete, declare, putBytes, upload } from "../support/send";

const encode = (text: string) => new TextEncoder().encode(text);
const BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8";

interface TarItem {
  name: string;
  bytes?: Uint8Array;
  /** ustar type flag: "0" file (the default), "5" directory, "2" symlink, "3" character device. */
  type?: string;
  link?: string;
}

/** A ustar archive of `items`, with the two zero blocks that end it. */
function tar(items: TarItem[]): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (const item of items) {
    const bytes = item.bytes ?? new Uint8Array(0);
    const header = new Uint8Array(512);
    const put = (offset: number, text: string) => header.set(encode(text), offset);
    put(0, item.name);
    put(100, "0000644\0");
    put(108, "0000000\0");
    put(116, "0000000\0");
    put(124, `${bytes.byteLength.toString(8).padStart(11, "0")}\0`);
    put(136, "00000000000\0");
    put(148, "        ");
    put(156, item.type ?? "0");
    put(157, item.link ?? "");
    put(257, "ustar\u000000");
    const sum = header.reduce((total, byte) => total + byte, 0);
    put(148, `${sum.toString(8).padStart(6, "0")}\0 `);
    blocks.push(header, bytes, new Uint8Array((512 - (bytes.byteLength % 512)) % 512));
  }
  return concat([...blocks, new Uint8Array(1024)]);
}

/** The names a zip's central directory lists, in order. */
function zipNames(zip: Uint8Array): string[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const end = zip.byteLength - 22;
  expect(view.getUint32(end, true)).toBe(0x06054b50);
  const names: string[] = [];
  let at = view.getUint32(end + 16, true);
  for (let i = 0; i < view.getUint16(end + 10, true); i++) {
    expect(view.getUint32(at, true)).toBe(0x02014b50);
    const nameLength = view.getUint16(at + 28, true);
    const skip = nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
    names.push(new TextDecoder().decode(zip.subarray(at + 46, at + 46 + nameLength)));
    at += 46 + skip;
  }
  return names;
}

const readme = encode("Read me first.\n");
const data = randomBytes(200_000);
/** Listing index → what it is; the offered ones are the clean files and the directory. */
const items: TarItem[] = [
  { name: "site/", type: "5" },
  { name: "site/readme.txt", bytes: readme },
  { name: "../evil.txt", bytes: encode("escapes the folder") },
  { name: "/etc/abs.txt", bytes: encode("absolute") },
  { name: "site/link", type: "2", link: "../../etc/passwd" },
  { name: "site/tty", type: "3" },
  { name: "site/\u202etxt.exe", bytes: encode("bidi") },
  { name: "site\\..\\win.txt", bytes: encode("backslashes") },
  { name: "site/data.bin", bytes: data },
  { name: "./site/readme.txt", bytes: encode("a second readme.txt") },
  { name: "site/empty.txt" },
  { name: "site/data.bin/inside.txt", bytes: encode("under a file") },
];
const OFFERED_ALONE = [1, 8, 10];

for (const backend of backends()) {
  describe(`archive entries and zips through share links on ${backend.name}`, () => {
    const client = new RelayClient(backend.env);

    type Sent = FileRecord & { token: string };

    async function sendArchive(bytes: Uint8Array, name: string): Promise<Sent> {
      const { token } = await client.mintSession();
      return { ...(await upload(client, token, bytes, name)), token };
    }

    /** A share link of `file` that may send `maxDownloads` times its size. */
    async function mintLink({ fileId, token }: Sent, maxDownloads: number): Promise<string> {
      const response = await client.call("POST", `/v1/files/${fileId}/links`, {
        token,
        json: { maxDownloads },
      });
      expect(response.status).toBe(201);
      return ((await response.json()) as { url: string }).url;
    }

    it("links each clean file and the zip; hostile entries are never offered", async () => {
      const file = await sendArchive(await gzip(tar(items)), "site.tar.gz");
      const page = await (await client.fetch(file.url, { headers: { accept: BROWSER } })).text();
      const linked = [...page.matchAll(/href="\?entry=(\d+)"/g)].map((m) => Number(m[1]));
      expect(linked).toEqual(OFFERED_ALONE);
      expect(page).toContain('href="?zip=1" download="site.zip"');

      const entry = await client.fetch(`${file.url}?entry=8`);
      expect(entry.status).toBe(200);
      expect(entry.headers.get("content-disposition")).toBe(
        "attachment; filename=\"data.bin\"; filename*=UTF-8''data.bin",
      );
      expect(await sha256Hex(await entry.arrayBuffer())).toBe(await sha256Hex(data));
      const first = await client.fetch(`${file.url}?entry=1`);
      expect(new Uint8Array(await first.arrayBuffer())).toEqual(readme);
      const empty = await client.fetch(`${file.url}?entry=10`);
      expect([empty.status, (await empty.arrayBuffer()).byteLength]).toEqual([200, 0]);

      const zip = await client.fetch(`${file.url}?zip=1`);
      expect(zip.status).toBe(200);
      expect(zip.headers.get("content-type")).toBe("application/zip");
      const bytes = new Uint8Array(await zip.arrayBuffer());
      expect(bytes.byteLength).toBe(Number(zip.headers.get("content-length")));
      expect(zipNames(bytes)).toEqual([
        "site/",
        "site/readme.txt",
        "site/data.bin",
        "site/empty.txt",
      ]);

      for (const hostile of [2, 3, 4, 5, 6, 7, 9, 11, 12]) {
        const refused = await client.fetch(`${file.url}?entry=${hostile}`);
        expect(await errorOf(refused)).toEqual({
          status: 404,
          code: "file_not_found",
          message: `the archive has no entry ${hostile} that can be downloaded on its own`,
        });
      }
      expect(await errorOf(await client.fetch(`${file.url}?entry=x`))).toEqual({
        status: 400,
        code: "invalid_request",
        message: "entry: must be an entry's number in the listing",
      });
      const plain = await sendArchive(randomBytes(5000), "notes.bin");
      expect(await errorOf(await client.fetch(`${plain.url}?zip=1`))).toEqual({
        status: 404,
        code: "file_not_found",
        message: "this file cannot be downloaded as a .zip",
      });
    });

    it("charges a capped link in proportion to the zip, and refuses once it is spent", async () => {
      const file = await sendArchive(await gzip(tar(items)), "budget.tar.gz");
      const url = await mintLink(file, 2);
      // A HEAD says the length and sends nothing: it costs nothing.
      const head = await client.fetch(`${url}?zip=1`, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(await bytesServed(url)).toBe(0);
      const zip = await client.fetch(`${url}?zip=1`);
      const zipLength = (await zip.arrayBuffer()).byteLength;
      expect(zip.status).toBe(200);
      expect(Number(head.headers.get("content-length"))).toBe(zipLength);
      // The whole zip is one download: the file's size in the link's bytes.
      expect(await bytesServed(url)).toBe(file.size);
      const entry = await client.fetch(`${url}?entry=8`);
      expect(entry.status).toBe(200);
      await entry.arrayBuffer();
      const share = Math.ceil((data.byteLength * file.size) / zipLength);
      expect(await bytesServed(url)).toBe(file.size + share);
      // What is left is less than a whole zip: refused before a byte goes out.
      const refused = await client.fetch(`${url}?zip=1`);
      expect(await errorOf(refused)).toMatchObject({ status: 410, code: "link_exhausted" });
      expect(await bytesServed(url)).toBe(file.size + share);
    });

    it("answers link_exhausted for an entry or the zip through a spent link", async () => {
      const file = await sendArchive(await gzip(tar(items)), "once.tar.gz");
      const url = await mintLink(file, 1);
      expect((await client.fetch(url)).status).toBe(200);
      for (const query of ["?zip=1", "?entry=1"]) {
        const refused = await client.fetch(`${url}${query}`);
        expect(await errorOf(refused)).toEqual({
          status: 410,
          code: "link_exhausted",
          message: "share link has reached its download limit",
        });
      }
    });

    it("serves an entry of a tar stored as gzip members from the members it touches", async () => {
      const MiB = 1024 * 1024;
      const deep = countingText(300_000);
      const archive = tar([
        { name: "big/filler.txt", bytes: countingText(3 * MiB) },
        { name: "big/deep.txt", bytes: deep },
      ]);
      const tabled = await gzipMembers(archive);
      const { token } = await client.mintSession();
      const answer = (await (
        await declare(client, token, { name: "big.tar", ...tabled.declared })
      ).json()) as UploadAnswer;
      if (answer.status !== "upload") throw new Error(`unexpected ${JSON.stringify(answer)}`);
      expect((await putBytes(client, answer.put, tabled.stored)).ok).toBe(true);
      const done = await complete(client, token, answer.uploadId);
      const record = (await done.json()) as FileRecord;

      const store = createBlobStore(readConfig(backend.env), backend.env);
      const { store: counting, read } = countingStore(store);
      const row = (await findFileIncludingDeleted(backend.env.DB, record.fileId))!;
      expect(row.members).not.toBeNull();
      const offer = (await findArchiveOffer(depsAt(backend.env, store, Date.now()), row))!;
      const entry = offer.entries.find((e) => e.name === "big/deep.txt")!;
      expect(offer.single.has(entry.index)).toBe(true);
      const body = await openEntry(counting, row, offer, entry);
      expect(await sha256Hex(await new Response(body).arrayBuffer())).toBe(await sha256Hex(deep));
      // The entry starts in member 3 and ends in member 4 (1 MiB spans): only those are read.
      const touched = tabled.table.storedSizes.slice(3, 4 + 1).reduce((a, b) => a + b, 0);
      expect(read()).toBe(touched);
    });
  });
}

/** A store whose reads count the stored bytes they return. */
function countingStore(store: BlobStore) {
  let bytes = 0;
  const counting: BlobStore = Object.create(store) as BlobStore;
  counting.get = async (key, range) => {
    const object = await store.get(key, range);
    if (!object) return object;
    const body = object.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          bytes += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    return { ...object, body };
  };
  return { store: counting, read: () => bytes };
}
