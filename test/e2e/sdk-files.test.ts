import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AirlockClient, AirlockError, type FetchLike, type InboxRecord } from "../../sdk/src/node";
import { rejectionOf } from "../support/rejection";
import {
  airlock,
  dir,
  relay,
  shimSend,
  useSdkSuite,
  MiB,
  randomStream,
  sha256,
} from "./sdk-support";

describe("the operator SDK against the relay under wrangler dev", () => {
  useSdkSuite();

  it("seeds the inbox from bytes, a Blob, a stream and a path; the sandbox sees each SHA-256 and gets each byte", async () => {
    const { sessionId, token } = await airlock.createSession();
    const bytes = new Uint8Array(randomBytes(300_000));
    const csv = new TextEncoder().encode("a,b\n1,2\n");
    const streamed = randomStream(3 * MiB + 17);
    const onDisk = new Uint8Array(randomBytes(5 * MiB + 3));
    const path = join(dir, "input data.bin");
    await writeFile(path, onDisk);

    const seeded: InboxRecord[] = [
      await airlock.seedInbox(sessionId, bytes, { name: "résumé 2026.pdf" }),
      await airlock.seedInbox(sessionId, new Blob([csv], { type: "text/csv" }), {
        name: "data.csv",
      }),
      await airlock.seedInbox(sessionId, streamed.stream, {
        name: "streamed.bin",
        size: 3 * MiB + 17,
        contentType: "application/x-test",
      }),
      await airlock.seedInbox(sessionId, path),
    ];
    const expected = [
      { name: "résumé 2026.pdf", size: bytes.byteLength, sha256: sha256(bytes) },
      { name: "data.csv", size: csv.byteLength, sha256: sha256(csv), contentType: "text/csv" },
      {
        name: "streamed.bin",
        size: 3 * MiB + 17,
        sha256: streamed.digest(),
        contentType: "application/x-test",
      },
      { name: "input data.bin", size: onDisk.byteLength, sha256: sha256(onDisk) },
    ];
    expect(seeded).toMatchObject(expected.map((e) => ({ ...e, source: "operator" })));
    expect(seeded[0]?.contentType).toBe("application/octet-stream");

    // The sandbox's view, over plain HTTP as the shim sees it.
    const inbox = await fetch(`${relay.url}/v1/inbox`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(inbox.status).toBe(200);
    const { items } = (await inbox.json()) as { items: InboxRecord[] };
    expect(items).toMatchObject(expected.map((e) => ({ ...e, source: "operator" })));
    expect(items.map((i) => i.itemId)).toEqual(seeded.map((s) => s.itemId));

    // And through the SDK's session client: the bytes themselves.
    const sandbox = airlock.asSession(token);
    // Each listing signs its links afresh, so they move with the clock's second.
    const unsigned = (list: InboxRecord[]) =>
      list.map(({ file, ...rest }) => ({ ...rest, file: { ...file, url: "", urlExpiresAt: "" } }));
    expect(unsigned(await sandbox.inbox())).toEqual(unsigned(items));
    for (const item of items) {
      const response = await sandbox.download(item.file.fileId);
      expect(response.headers.get("content-length")).toBe(String(item.size));
      expect(sha256(new Uint8Array(await response.arrayBuffer()))).toBe(item.sha256);
    }
    const part = await sandbox.download(items[0]!.file.fileId, { range: { start: 10, end: 19 } });
    expect(part.status).toBe(206);
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(10, 20));

    expect(await sandbox.ack(items[0]!.itemId)).toMatchObject({ itemId: items[0]!.itemId });
    expect((await sandbox.inbox()).map((i) => i.itemId)).toEqual(
      items.slice(1).map((i) => i.itemId),
    );
  });

  it("refuses a stream without a size, and one shorter than its size is an AirlockError that seeds nothing", async () => {
    const { sessionId, token } = await airlock.createSession();
    await expect(
      // @ts-expect-error: a stream needs its size
      airlock.seedInbox(sessionId, randomStream(10).stream, { name: "x.bin" }),
    ).rejects.toThrow(TypeError);
    const short = await rejectionOf<AirlockError>(
      airlock.seedInbox(sessionId, randomStream(1000).stream, { name: "short.bin", size: 2000 }),
    );
    expect(short).toBeInstanceOf(AirlockError);
    expect(short).toMatchObject({ status: 0, code: "network_error" });
    expect(short.message).toMatch(/^POST \/v1\/sessions\/ses_[\w-]+\/inbox: request failed: /);
    expect(short.cause).toBeInstanceOf(Error);
    expect(await airlock.asSession(token).inbox()).toEqual([]);
  });

  it("lists what a session produced and downloads it to disk byte-exact, leaving no temp file", async () => {
    const producer = await airlock.createSession();
    const other = await airlock.createSession();
    const random = randomBytes(4 * MiB + 11);
    const log = Buffer.from(
      Array.from({ length: 40_000 }, (_, i) => `2026-11-21T12:00:00Z INFO item ${i} ok\n`).join(
        "",
      ) + randomBytes(8).toString("hex"),
    );
    await writeFile(join(dir, "result.bin"), random);
    await writeFile(join(dir, "run.log"), log); // compressible: the shim stores it gzipped
    const sent = await shimSend(producer.token, join(dir, "result.bin"), join(dir, "run.log"));
    const [otherFile] = await shimSend(other.token, join(dir, "result.bin")); // deduped, other session

    const files = await airlock.listFiles({ sessionId: producer.sessionId });
    expect(files.map((f) => f.fileId).sort()).toEqual(sent.map((s) => s.fileId).sort());
    expect(files.every((f) => f.sessionId === producer.sessionId)).toBe(true);
    const all = await airlock.listFiles();
    expect(all.map((f) => f.fileId)).toEqual(
      expect.arrayContaining([...sent.map((s) => s.fileId), otherFile!.fileId]),
    );

    const out = join(dir, "out");
    await mkdir(out);
    const byName = new Map<string, Uint8Array>([
      ["result.bin", random],
      ["run.log", log],
    ]);
    for (const file of files) {
      const record = await airlock.downloadToFile(file.fileId, join(out, file.name));
      expect(record).toMatchObject({ fileId: file.fileId, sha256: file.sha256 });
      const written = await readFile(join(out, file.name));
      expect(written.byteLength).toBe(byName.get(file.name)!.byteLength);
      expect(sha256(written)).toBe(sha256(byName.get(file.name)!));
    }
    expect((await readdir(out)).sort()).toEqual(["result.bin", "run.log"]);

    // The session can do the same with its own files, replacing what is there.
    const sandbox = airlock.asSession(producer.token);
    const logId = files.find((f) => f.name === "run.log")!.fileId;
    await writeFile(join(out, "result.bin"), "stale");
    await sandbox.downloadToFile(
      files.find((f) => f.name === "result.bin")!.fileId,
      join(out, "result.bin"),
    );
    expect(sha256(await readFile(join(out, "result.bin")))).toBe(sha256(random));
    expect((await readdir(out)).sort()).toEqual(["result.bin", "run.log"]);
    // …but not another session's.
    expect(await rejectionOf<AirlockError>(sandbox.getFile(otherFile!.fileId))).toMatchObject({
      status: 404,
      code: "file_not_found",
    });
    expect((await sandbox.getFile(logId)).size).toBe(log.byteLength);

    // downloadToDir: each file under its own name, numbered rather than replacing one.
    const collected = join(dir, "collected");
    await mkdir(collected);
    await writeFile(join(collected, "run.log"), "mine");
    for (const file of files) {
      const saved = await airlock.downloadToDir(file.fileId, collected);
      expect(saved).toMatchObject({ fileId: file.fileId, sha256: file.sha256 });
      expect(sha256(await readFile(saved.path))).toBe(sha256(byName.get(file.name)!));
    }
    const again = await sandbox.downloadToDir(logId, collected);
    expect(again.path).toBe(join(collected, "run (2).log"));
    expect(await readFile(join(collected, "run.log"), "utf8")).toBe("mine");
    expect((await readdir(collected)).sort()).toEqual([
      "result.bin",
      "run (1).log",
      "run (2).log",
      "run.log",
    ]);
  });

  it("downloadToFile keeps nothing when the bytes do not match the file record", async () => {
    const { token } = await airlock.createSession();
    const bytes = randomBytes(200_000);
    await writeFile(join(dir, "exact.bin"), bytes);
    const [sent] = await shimSend(token, join(dir, "exact.bin"));
    // A fetch that flips one byte of the content on its way (a broken proxy, a bad disk).
    const corrupting: FetchLike = async (url, init) => {
      const response = await fetch(url, init);
      if (!url.endsWith("/content")) return response;
      const body = new Uint8Array(await response.arrayBuffer());
      body[1234] = body[1234]! ^ 0xff;
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const client = new AirlockClient({
      url: relay.url,
      adminToken: relay.adminToken,
      fetch: corrupting,
    });
    const out = await mkdtemp(join(dir, "mismatch-"));
    const refused = await rejectionOf<AirlockError>(
      client.downloadToFile(sent!.fileId, join(out, "exact.bin")),
    );
    expect(refused).toBeInstanceOf(AirlockError);
    expect(refused).toMatchObject({ status: 0, code: "download_mismatch" });
    expect(refused.message).toContain(sent!.sha256);
    expect(await readdir(out)).toEqual([]);
  });
});
