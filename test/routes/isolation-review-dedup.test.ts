import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { FileRecord } from "../../src/wire-types";
import { backends } from "../support/backends";
import { logText } from "../support/bytes";
import { ORIGIN } from "../support/relay-client";
import { describe as describeBytes, upload } from "../support/send";
import { isolationHarness } from "./isolation-review-harness";

/** Isolation through dedup: a session's own dedup hit tells nothing about what other owners sent. */
for (const backend of backends()) {
  describe(`sandbox isolation on ${backend.name}`, { timeout: 120_000 }, () => {
    const { client, mint } = isolationHarness(backend);

    // Found by this review: a dedup hit took the form (encoding, object) of the content's blob,
    // which another scope's later upload (or link PUT, attachment, seed) re-homes onto its
    // own copy in its own encoding. On s3 an identity file answers 307 to the store and a gzip
    // one 200 from the relay, so the caller's own dedup hit told it whether another owner had
    // sent the content meanwhile. A dedup hit now takes the form of the scope's own file.
    if (backend.name === "s3")
      it("serves a dedup hit the same whether or not another owner sent the content since", async () => {
        const mine = await mint({ owner: `watcher-${crypto.randomUUID()}` });
        const other = await mint({ owner: `other-${crypto.randomUUID()}` });
        const content = logText(4000);
        // The watcher holds the content, stored gzip (as the shim sends compressible files).
        const held = await upload(client, mine.token, content, "doc.txt", "gzip");
        expect(held.status).toBe("verified");
        const download = async (fileId: string) => {
          const response = await client.fetch(`${ORIGIN}/v1/files/${fileId}/content`, {
            headers: { authorization: `Bearer ${mine.token}` },
            redirect: "manual",
          });
          await response.body?.cancel();
          return response.status;
        };
        // A dedup hit through a declare, and through the one-request route.
        const probe = async () => {
          const hit = await upload(client, mine.token, content, "probe.txt", "gzip");
          expect(hit.deduped).toBe(true);
          const { declared, stored } = await describeBytes(content, "probe-one.txt", "gzip");
          const { name, size, sha256, encoding, storedSha256 } = declared;
          const query = new URLSearchParams({ name, sha256, encoding, storedSha256 });
          query.set("size", String(size));
          const one = await client.call("POST", `/v1/single-uploads?${query}`, {
            token: mine.token,
            body: stored,
            headers: { "content-length": String(stored.byteLength) },
          });
          const oneHit = (await one.json()) as FileRecord;
          expect(oneHit.deduped).toBe(true);
          return [await download(hit.fileId), await download(oneHit.fileId)];
        };
        const before = await probe();
        expect(before).toEqual([200, 200]);
        // Another owner sends the same bytes as they are.
        const theirs = await upload(client, other.token, content, "doc.txt");
        expect(theirs.deduped).toBe(false);
        expect(await probe()).toEqual(before);
      });

    // Found by this review: on r2, where the relay cannot copy objects, a verified upload
    // moved onto the content's existing blob whatever that blob's encoding, so a file sent as
    // it is, whose content another owner had stored gzip, was inflated from the start on every
    // read: a Range at its end took the time of inflating the whole file (about 20× the same
    // Range on a file nobody else holds, at 26 MB), an existence oracle that a timer reads.
    // A file now moves only onto a blob of the same stored bytes: the cause is checked here
    // (the file's stored form), not a timer.
    if (backend.name === "r2")
      it("keeps a file on stored bytes of its own encoding when another owner holds its content gzipped", async () => {
        const holder = await mint({ owner: `holder-${crypto.randomUUID()}` });
        const prober = await mint({ owner: `prober-${crypto.randomUUID()}` });
        const held = logText(400_000);
        const fresh = logText(400_000);
        const holderFile = await upload(client, holder.token, held, "held.log", "gzip");
        const guessed = await upload(client, prober.token, held, "guess.log");
        const control = await upload(client, prober.token, fresh, "control.log");
        expect([guessed.deduped, control.deduped]).toEqual([false, false]);
        const storedForm = (fileId: string) =>
          env.DB.prepare("SELECT encoding, stored_key FROM files WHERE id = ?")
            .bind(fileId)
            .first<{ encoding: string; stored_key: string }>();
        const [holderRow, guessedRow, controlRow] = await Promise.all(
          [holderFile, guessed, control].map((file) => storedForm(file.fileId)),
        );
        expect(holderRow?.encoding).toBe("gzip");
        expect(guessedRow?.encoding).toBe("identity");
        expect(controlRow?.encoding).toBe("identity");
        expect(guessedRow?.stored_key).not.toBe(holderRow?.stored_key);
        const tail = await client.call("GET", `/v1/files/${guessed.fileId}/content`, {
          token: prober.token,
          headers: { range: `bytes=${guessed.size - 16}-` },
        });
        expect(tail.status).toBe(206);
        expect(new Uint8Array(await tail.arrayBuffer())).toEqual(held.subarray(held.length - 16));
      });
  });
}
