import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { findFile } from "../../src/db/files";
import { readHead } from "../../src/services/original-bytes";
import { blobKey, createBlobStore, uploadKey, type BlobStore } from "../../src/storage";
import type { FileRecord, UploadAnswer } from "../../src/wire-types";
import { backends } from "../support/backends";
import { gzip, sha256Hex } from "../support/bytes";
import { concat, countingText, gzipMembers } from "../support/gzip-members";
import { errorOf, RelayClient } from "../support/relay-client";
import { complete, declare, putBytes } from "../support/send";

const MiB = 1024 * 1024;

type Table = { span: number; storedSizes: number[] };

/** A store that delegates every call to the real one and records the byte ranges read. */
function recordingStore(store: BlobStore) {
  const reads: { key: string; range?: { offset: number; length: number }; bytes: number }[] = [];
  const recording: BlobStore = Object.create(store) as BlobStore;
  recording.get = async (key, range) => {
    const object = await store.get(key, range);
    if (!object) return object;
    const read = { key, range, bytes: 0 };
    reads.push(read);
    const counted = object.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          read.bytes += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    return { ...object, body: counted };
  };
  return { store: recording, reads };
}

for (const backend of backends()) {
  describe(
    `gzip member tables on ${backend.name}: reads cost what they serve`,
    { timeout: 60_000 },
    () => {
      const client = new RelayClient(backend.env);
      const store = createBlobStore(readConfig(backend.env), backend.env);

      /** Declares, PUTs and completes `stored` with the fields given; returns the complete answer. */
      async function send(
        token: string,
        declared: Record<string, unknown> & { storedSha256: string },
        stored: Uint8Array,
      ) {
        const answer = (await (
          await declare(client, token, { name: "notes.txt", ...declared })
        ).json()) as UploadAnswer;
        if (answer.status !== "upload") throw new Error(`unexpected ${JSON.stringify(answer)}`);
        const put = await putBytes(client, answer.put, stored);
        expect(put.status, await put.clone().text()).toBeLessThan(300);
        const done = await complete(client, token, answer.uploadId);
        return { done, uploadId: answer.uploadId, storedSha256: declared.storedSha256 };
      }

      /** Nothing of an upload is stored: neither its own object nor a content-keyed copy. */
      async function expectNothingStored(storedSha256: string, uploadId: string) {
        expect(await store.head(uploadKey(storedSha256, uploadId))).toBeNull();
        expect(await store.head(blobKey(storedSha256))).toBeNull();
      }

      const text = countingText(3 * MiB + 123_457);
      const size = text.byteLength;

      it.each([
        ["the first bytes", "bytes=0-99", 0, 100],
        ["a range across the first member boundary", "bytes=1048570-1048585", 1048570, 16],
        ["a middle range over three members", "bytes=1000000-2200000", 1000000, 1200001],
        ["the last bytes", `bytes=${size - 100}-`, size - 100, 100],
        ["a suffix", "bytes=-10", size - 10, 10],
      ])(
        "serves %s of a tabled file byte-exact through its share link",
        async (_, range, offset, length) => {
          const { token } = await client.mintSession();
          const tabled = await gzipMembers(text);
          const { done } = await send(token, tabled.declared, tabled.stored);
          expect(done.status, await done.clone().text()).toBe(201);
          const file = (await done.json()) as FileRecord;
          expect(file.status).toBe("verified");

          const answer = await client.fetch(file.url, { headers: { range } });
          expect(answer.status).toBe(206);
          expect(answer.headers.get("accept-ranges")).toBe("bytes");
          expect(answer.headers.get("content-range")).toBe(
            `bytes ${offset}-${offset + length - 1}/${size}`,
          );
          const body = new Uint8Array(await answer.arrayBuffer());
          expect(body.byteLength).toBe(length);
          expect(await sha256Hex(body)).toBe(
            await sha256Hex(text.subarray(offset, offset + length)),
          );
        },
      );

      it("reads only the stored bytes of the members a range touches, and a whole file exactly", async () => {
        const { token } = await client.mintSession();
        const tabled = await gzipMembers(text);
        const { done } = await send(token, tabled.declared, tabled.stored);
        const record = (await done.json()) as FileRecord;
        const whole = await client.fetch(record.url);
        expect(whole.status).toBe(200);
        expect(await sha256Hex(await whole.arrayBuffer())).toBe(tabled.declared.sha256);

        const file = await findFile(backend.env.DB, record.fileId);
        expect(file?.members).toEqual(tabled.table);
        const sizes = tabled.table.storedSizes;
        const recording = recordingStore(store);
        const { openOriginal } = await import("../../src/services/original-bytes");
        const body = await openOriginal(recording.store, file!, { offset: size - 10, length: 10 });
        expect(await sha256Hex(await new Response(body).arrayBuffer())).toBe(
          await sha256Hex(text.subarray(size - 10)),
        );
        const lastOffset = sizes.slice(0, 3).reduce((a, b) => a + b, 0);
        expect(recording.reads.map((r) => r.range)).toEqual([
          { offset: lastOffset, length: sizes[3] },
        ]);
      });

      it("refuses a table whose members split the file elsewhere (the hash alone matches): 422, nothing stored", async () => {
        const { token } = await client.mintSession();
        const text = countingText(size);
        // Member 0 covers one byte less than the span, member 1 one byte more: same original bytes.
        const members = [
          await gzip(text.subarray(0, MiB - 1)),
          await gzip(text.subarray(MiB - 1, 2 * MiB)),
          await gzip(text.subarray(2 * MiB, 3 * MiB)),
          await gzip(text.subarray(3 * MiB)),
        ];
        const stored = concat(members);
        const honest = await gzipMembers(text);
        const declared = {
          ...honest.declared,
          storedSize: stored.byteLength,
          storedSha256: await sha256Hex(stored),
          members: { span: MiB, storedSizes: members.map((m) => m.byteLength) },
        };
        const { done, uploadId, storedSha256 } = await send(token, declared, stored);
        expect(await errorOf(done)).toEqual({
          status: 422,
          code: "content_mismatch",
          message:
            "the stored bytes are not the declared content (size or SHA-256); nothing was kept",
        });
        await expectNothingStored(storedSha256, uploadId);
      });

      it("refuses a table whose sizes do not fall on member boundaries: 422, nothing stored", async () => {
        const { token } = await client.mintSession();
        const text = countingText(size);
        const tabled = await gzipMembers(text);
        const [a, b, ...rest] = tabled.table.storedSizes as [number, number, ...number[]];
        const members: Table = { span: MiB, storedSizes: [a + 1, b - 1, ...rest] };
        const { done, uploadId, storedSha256 } = await send(
          token,
          { ...tabled.declared, members },
          tabled.stored,
        );
        expect(await errorOf(done)).toMatchObject({ status: 422, code: "content_mismatch" });
        await expectNothingStored(storedSha256, uploadId);
      });

      it("refuses a lying table on the verify queue too (a large upload): the file and its bytes go", async () => {
        const { token } = await client.mintSession();
        // Random bytes compress not at all: over the 4 MiB verified inline, so the queue checks it.
        const noisy = new Uint8Array(5 * MiB);
        for (let i = 0; i < noisy.byteLength; i += 65536) {
          crypto.getRandomValues(noisy.subarray(i, i + 65536));
        }
        const honest = await gzipMembers(noisy);
        const [a, b, ...rest] = honest.table.storedSizes as [number, number, ...number[]];
        const declared = {
          ...honest.declared,
          members: { span: MiB, storedSizes: [a + 1, b - 1, ...rest] },
        };
        const stored = honest.stored;
        client.holdVerification();
        try {
          const { done, uploadId, storedSha256 } = await send(token, declared, stored);
          expect(done.status, await done.clone().text()).toBe(201);
          const file = (await done.json()) as FileRecord;
          expect(file.status).toBe("pending");
          await client.runQueued();
          const after = await client.call("GET", `/v1/files/${file.fileId}`, { token });
          expect(after.status).toBe(404);
          await expectNothingStored(storedSha256, uploadId);
        } finally {
          client.resumeVerification();
        }
      });

      it("verifies an honest table on the verify queue and serves its ranges", async () => {
        const { token } = await client.mintSession();
        const noisy = new Uint8Array(5 * MiB + 7);
        for (let i = 0; i < noisy.byteLength; i += 65536) {
          crypto.getRandomValues(noisy.subarray(i, Math.min(i + 65536, noisy.byteLength)));
        }
        const tabled = await gzipMembers(noisy);
        client.holdVerification();
        let file: FileRecord;
        try {
          const { done } = await send(token, tabled.declared, tabled.stored);
          file = (await done.json()) as FileRecord;
          expect(file.status).toBe("pending");
          await client.runQueued();
        } finally {
          client.resumeVerification();
        }
        const meta = await client.call("GET", `/v1/files/${file.fileId}`, { token });
        expect(((await meta.json()) as FileRecord).status).toBe("verified");
        const answer = await client.fetch(file.url, { headers: { range: "bytes=-10" } });
        expect(answer.status).toBe(206);
        expect(await sha256Hex(await answer.arrayBuffer())).toBe(
          await sha256Hex(noisy.subarray(noisy.byteLength - 10)),
        );
      });

      it("refuses a lying table in a one-request upload: 422, nothing stored", async () => {
        const { token } = await client.mintSession();
        const small = countingText(2 * MiB + 10);
        const tabled = await gzipMembers(small);
        const [a, b, c] = tabled.table.storedSizes as [number, number, number];
        const query = new URLSearchParams({
          name: "small.txt",
          size: String(small.byteLength),
          sha256: tabled.declared.sha256,
          encoding: "gzip",
          storedSha256: tabled.declared.storedSha256,
          memberSpan: String(MiB),
          memberSizes: [a - 5, b + 5, c].join(","),
        });
        const answer = await client.call("POST", `/v1/single-uploads?${query}`, {
          token,
          body: tabled.stored,
          headers: { "content-length": String(tabled.stored.byteLength) },
        });
        expect(await errorOf(answer)).toEqual({
          status: 422,
          code: "content_mismatch",
          message:
            "the uploaded bytes are not the declared content (size or SHA-256); nothing was kept",
        });
        expect(await store.head(blobKey(tabled.declared.storedSha256))).toBeNull();
        const listed = await client.call("GET", "/v1/files", { token });
        expect(((await listed.json()) as { files: unknown[] }).files).toEqual([]);
      });

      it("serves an untabled gzip file over 8 MiB whole for a range past 8 MiB (200, Accept-Ranges: none)", async () => {
        const { token } = await client.mintSession();
        const big = countingText(9 * MiB);
        const stored = await gzip(big);
        const declared = {
          size: big.byteLength,
          sha256: await sha256Hex(big),
          encoding: "gzip",
          storedSize: stored.byteLength,
          storedSha256: await sha256Hex(stored),
        };
        const { done } = await send(token, declared, stored);
        expect(done.status, await done.clone().text()).toBe(201);
        const file = (await done.json()) as FileRecord;

        const suffix = await client.fetch(file.url, { headers: { range: "bytes=-10" } });
        expect(suffix.status).toBe(200);
        expect(suffix.headers.get("accept-ranges")).toBe("none");
        expect(suffix.headers.get("content-range")).toBeNull();
        expect(suffix.headers.get("content-length")).toBe(String(big.byteLength));
        expect(await sha256Hex(await suffix.arrayBuffer())).toBe(declared.sha256);

        const near = await client.fetch(file.url, { headers: { range: "bytes=100-199" } });
        expect(near.status).toBe(206);
        expect(await sha256Hex(await near.arrayBuffer())).toBe(
          await sha256Hex(big.subarray(100, 200)),
        );

        // A head read (the page's sample, a sniff) inflates lazily: it reads about what it returns.
        const row = await findFile(backend.env.DB, file.fileId);
        expect(row?.members).toBeNull();
        const recording = recordingStore(store);
        const head = await readHead(recording.store, row!, 8192);
        expect(await sha256Hex(head)).toBe(await sha256Hex(big.subarray(0, 8192)));
        expect(recording.reads).toHaveLength(1);
        console.log("head read", recording.reads[0]!.bytes, "of", stored.byteLength);
        expect(recording.reads[0]!.bytes).toBeLessThan(stored.byteLength / 3);
      });
    },
  );
}
