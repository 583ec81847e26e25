import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { apiCall } from "../support/api-call";
import { concat, countingText, gzipMembers } from "../support/gzip-members";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { gzipBomb } from "../support/tar-bomb";

/**
 * Issue 24 §1, "a request costs what it serves", attacked as the issue did, against `wrangler
 * dev` on both backends: the sandbox sends with its token (stored bytes built here by hand, as
 * the shims build them), the attacker holds only the share link. Outcomes only: exact bytes,
 * exact refusals, nothing stored, the listing's stop and its note. The cost itself is measured
 * in `bench/gzip-cost.bench.ts`.
 */
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const MiB = 1024 * 1024;
const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/** A declare of `text` stored as the gzip bytes `stored` (untabled). */
function gzipDeclaration(name: string, text: Uint8Array, stored: Uint8Array) {
  return {
    name,
    size: text.byteLength,
    sha256: sha256(text),
    encoding: "gzip",
    storedSize: stored.byteLength,
    storedSha256: sha256(stored),
  };
}

type Sent = { status: number; body: Record<string, unknown> & { url?: string; fileId?: string } };

for (const storage of ["r2", "s3"] as const) {
  describe(`gzip costs on ${storage}, attacked with a share link (wrangler dev)`, () => {
    let relay: RunningRelay;
    let s3: StrictS3 | undefined;
    let token: string;

    beforeAll(async () => {
      if (storage === "s3") s3 = await startStrictS3();
      relay = await startRelay(s3 ? { storage, vars: s3Vars(s3) } : { storage });
      token = (await relay.mintSession()).token;
    }, 180_000);
    afterAll(async () => {
      await relay?.stop();
      await s3?.stop();
    });

    const api = (method: string, path: string, json?: unknown) =>
      apiCall(relay.url, token, method, path, json);

    /** The sandbox's send: declare, PUT the stored bytes, complete. */
    async function send(declared: Record<string, unknown>, stored: Uint8Array): Promise<Sent> {
      const answer = await api("POST", "/v1/uploads", declared);
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      const { put, uploadId } = answer.body as {
        put: { url: string; headers: Record<string, string> };
        uploadId: string;
      };
      const putAnswer = await fetch(put.url, { method: "PUT", headers: put.headers, body: stored });
      expect(putAnswer.status, await putAnswer.text()).toBeLessThan(300);
      return (await api("POST", `/v1/uploads/${uploadId}/complete`)) as Sent;
    }

    /** Waits for the verify queue to check a file (a member table is used once verified). */
    async function verified(fileId: string): Promise<void> {
      for (let i = 0; i < 300; i++) {
        const file = await api("GET", `/v1/files/${fileId}`);
        if ((file.body as { status?: string }).status === "verified") return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`${fileId} was not verified in 30 s`);
    }

    /** Stored keys of these stored bytes (s3 only: the store is listed directly). */
    async function keysOf(storedSha256: string): Promise<string[] | null> {
      if (!s3) return null;
      return (await s3.listKeys()).filter((key) => key.includes(storedSha256));
    }

    it("serves a link holder's 10-byte and boundary ranges of a tabled 32 MiB text file exactly", async () => {
      const text = countingText(32 * MiB + 5);
      const tabled = await gzipMembers(text);
      const sent = await send({ name: "big.log", ...tabled.declared }, tabled.stored);
      expect(sent.status, JSON.stringify(sent.body)).toBe(201);
      // 32 MiB declared: checked on the queue, not in `complete` (what a request inflates is bounded).
      await verified(sent.body.fileId!);
      const url = sent.body.url!;
      for (const [range, offset, length] of [
        ["bytes=-10", text.byteLength - 10, 10],
        ["bytes=16777210-16777225", 16 * MiB - 6, 16],
        [`bytes=${5 * MiB - 1}-${7 * MiB}`, 5 * MiB - 1, 2 * MiB + 2],
      ] as const) {
        const answer = await fetch(url, { headers: { range } });
        expect(answer.status).toBe(206);
        expect(answer.headers.get("content-range")).toBe(
          `bytes ${offset}-${offset + length - 1}/${text.byteLength}`,
        );
        const body = new Uint8Array(await answer.arrayBuffer());
        expect(sha256(body)).toBe(sha256(text.subarray(offset, offset + length)));
      }
      const page = await fetch(url, { headers: { accept: BROWSER } });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain(new TextDecoder().decode(text.subarray(0, 36)));
      expect(relay.output()).not.toContain('"inflate_stopped"');
    });

    it("answers a range past 8 MiB of an untabled gzip file with the whole file, 200", async () => {
      const text = countingText(12 * MiB);
      const stored = gzipSync(text);
      const sent = await send(gzipDeclaration("old-shim.log", text, stored), stored);
      expect(sent.status, JSON.stringify(sent.body)).toBe(201);
      const answer = await fetch(sent.body.url!, { headers: { range: "bytes=-10" } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("accept-ranges")).toBe("none");
      expect(sha256(new Uint8Array(await answer.arrayBuffer()))).toBe(sha256(text));
    });

    it("refuses a table whose members split the file elsewhere: 422, and nothing is stored", async () => {
      const text = countingText(3 * MiB);
      const members = [
        gzipSync(text.subarray(0, MiB + 1)),
        gzipSync(text.subarray(MiB + 1, 2 * MiB)),
        gzipSync(text.subarray(2 * MiB)),
      ];
      const stored = concat(members);
      const sent = await send(
        {
          ...gzipDeclaration("liar.log", text, stored),
          members: { span: MiB, storedSizes: members.map((m) => m.byteLength) },
        },
        stored,
      );
      expect(sent).toEqual({
        status: 422,
        body: {
          error: {
            code: "content_mismatch",
            message:
              "the stored bytes are not the declared content (size or SHA-256); nothing was kept",
          },
        },
      });
      const files = (await api("GET", "/v1/files")).body.files as { name: string }[];
      expect(files.map((f) => f.name)).not.toContain("liar.log");
      const keys = await keysOf(sha256(stored));
      if (keys) expect(keys).toEqual([]);
    });

    it("stops listing a 1 GiB gzip bomb at its 64 MiB inflated cap, and the page says so", async () => {
      const bomb = await gzipBomb();
      const sent = await send(
        {
          name: "bomb.tar.gz",
          size: bomb.byteLength,
          sha256: sha256(bomb),
          contentType: "application/gzip",
          encoding: "identity",
          storedSize: bomb.byteLength,
          storedSha256: sha256(bomb),
        },
        bomb,
      );
      expect(sent.status, JSON.stringify(sent.body)).toBe(201);
      let listed: { stopped?: string; entries?: number } | undefined;
      for (let i = 0; i < 600 && !listed; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const line = relay
          .output()
          .split("\n")
          .find((l) => l.includes('"archive_listed"') && l.includes(sent.body.fileId!));
        if (line) {
          listed = JSON.parse(line.slice(line.indexOf("{"), line.lastIndexOf("}") + 1)) as {
            stopped?: string;
            entries?: number;
          };
        }
      }
      expect(listed).toMatchObject({ level: "warn", stopped: "bytes", entries: 1 });
      console.log(`bomb listing on ${storage}: ${JSON.stringify(listed)}`);
      const page = await fetch(sent.body.url!, { headers: { accept: BROWSER } });
      expect(await page.text()).toContain("Listing stopped after reading 64 MiB of the archive.");
    });
  });
}
