import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AirlockClient,
  AirlockError,
  AirlockSession,
  type FetchLike,
  type InboxRecord,
} from "../../sdk/src/node";
import { prepareShim, RUNTIMES, runShim } from "../shim/run-shim";
import { freePort, type RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";
import { rejectionOf } from "../support/rejection";

const root = fileURLToPath(new URL("../..", import.meta.url));
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const MiB = 1024 * 1024;

/** A stream of `size` random bytes in uneven chunks, and their SHA-256 once it has been read. */
function randomStream(size: number) {
  const hash = createHash("sha256");
  let left = size;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (left === 0) return controller.close();
      const chunk = randomBytes(Math.min(left, 50_000 + Math.floor(Math.random() * 100_000)));
      left -= chunk.byteLength;
      hash.update(chunk);
      controller.enqueue(new Uint8Array(chunk));
    },
  });
  return { stream, digest: () => hash.digest("hex") };
}

describe("the operator SDK against the relay under wrangler dev", () => {
  let relay: RunningRelay;
  let airlock: AirlockClient;
  let dir: string;

  beforeAll(async () => {
    prepareShim();
    relay = sharedRelay();
    airlock = new AirlockClient({ url: relay.url, adminToken: relay.adminToken });
    dir = await mkdtemp(join(tmpdir(), "airlock-sdk-"));
  });
  afterAll(async () => {
    await relay?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** `airlock send --json` in a sandbox with `token`: one record per file. */
  async function shimSend(token: string, ...paths: string[]) {
    const sent = await runShim(["send", ...paths, "--json"], {
      env: { AIRLOCK_URL: relay.url, AIRLOCK_TOKEN: token },
    });
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    return sent.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { fileId: string; sha256: string; size: number });
  }

  it("creates a session and revokes it: its token then gets 401 session_revoked as an AirlockError", async () => {
    const grant = await airlock.createSession({ quotaBytes: 10 * MiB, ttlSeconds: 600 });
    expect(grant).toMatchObject({
      sessionId: expect.stringMatching(/^ses_/),
      token: expect.any(String),
      destinations: [],
      quotaBytes: 10 * MiB,
    });
    const expiresIn = Date.parse(grant.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(590_000);
    expect(expiresIn).toBeLessThanOrEqual(600_000);

    const sandbox = airlock.asSession(grant.token);
    expect(sandbox).toBeInstanceOf(AirlockSession);
    expect(await sandbox.listFiles()).toEqual([]);
    expect(await sandbox.inbox()).toEqual([]);

    const revoked = await airlock.revokeSession(grant.sessionId);
    expect(revoked.sessionId).toBe(grant.sessionId);
    expect(Math.abs(Date.parse(revoked.revokedAt) - Date.now())).toBeLessThan(60_000);

    const refused = await rejectionOf<AirlockError>(sandbox.listFiles());
    expect(refused).toBeInstanceOf(AirlockError);
    expect(refused).toBeInstanceOf(Error);
    expect(refused).toMatchObject({
      name: "AirlockError",
      status: 401,
      code: "session_revoked",
      message: "session has been revoked",
    });
    // The same through the constructor's `token` option.
    const viaOption = new AirlockClient({ url: relay.url, token: grant.token }).asSession();
    expect(await rejectionOf<AirlockError>(viaOption.inbox())).toMatchObject({
      status: 401,
      code: "session_revoked",
    });

    expect(
      await rejectionOf<AirlockError>(airlock.revokeSession("ses_AAAAAAAAAAAAAAAAAAAAAA")),
    ).toMatchObject({
      status: 404,
      code: "session_not_found",
    });
  });

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

  it("a chat on a platform this relay lacks is refused at mint: 400 platform_not_configured", async () => {
    // The shared relay has no chat platform configured.
    expect(
      await rejectionOf<AirlockError>(airlock.createSession({ destinations: ["telegram:-1001"] })),
    ).toMatchObject({
      status: 400,
      code: "platform_not_configured",
      message: "telegram is not configured on this relay",
    });
  });

  it("delivering to an unbound destination is a 403 destination_not_allowed AirlockError; deliveries are listed", async () => {
    const { token } = await airlock.createSession();
    await writeFile(join(dir, "chart.bin"), randomBytes(1000));
    const [sent] = await shimSend(token, join(dir, "chart.bin"));
    const sandbox = airlock.asSession(token);
    const refused = await rejectionOf<AirlockError>(
      sandbox.deliver(sent!.fileId, { to: "telegram:43", caption: "hi", idempotencyKey: "k-1" }),
    );
    expect(refused).toBeInstanceOf(AirlockError);
    expect(refused).toMatchObject({
      status: 403,
      code: "destination_not_allowed",
      message: "this session may not deliver to telegram:43",
    });
    expect(
      await rejectionOf<AirlockError>(sandbox.deliver(sent!.fileId, { to: "email:bob" })),
    ).toMatchObject({
      status: 400,
      code: "invalid_request",
    });
    expect(await airlock.listDeliveries(sent!.fileId)).toEqual([]);
    expect(await sandbox.listDeliveries(sent!.fileId)).toEqual([]);
  });

  it("errors carry the relay's code and message; credentials are never mixed up", async () => {
    expect(await rejectionOf<AirlockError>(airlock.getFile("fil_nope"))).toMatchObject({
      status: 404,
      code: "file_not_found",
      message: "no such file",
    });
    const wrong = new AirlockClient({ url: relay.url, adminToken: "not-the-admin-token" });
    expect(await rejectionOf<AirlockError>(wrong.createSession())).toMatchObject({
      status: 401,
      code: "invalid_token",
    });
    expect(
      await rejectionOf<AirlockError>(airlock.createSession({ ttlSeconds: 365 * 86400 })),
    ).toMatchObject({
      status: 400,
      code: "invalid_request",
      message: expect.stringContaining("ttlSeconds"),
    });
    // A session token may not act as the operator.
    const { token } = await airlock.createSession();
    const confused = new AirlockClient({ url: relay.url, adminToken: token });
    expect(await rejectionOf<AirlockError>(confused.createSession())).toMatchObject({
      status: 403,
      code: "forbidden",
    });
    // Operator calls without an admin token fail before any request.
    const noAdmin = new AirlockClient({ url: relay.url, token });
    await expect(noAdmin.createSession()).rejects.toThrow(/adminToken/);
    await expect(noAdmin.listFiles()).rejects.toThrow(TypeError);
    expect(() => new AirlockClient({ url: relay.url }).asSession()).toThrow(/session token/);
    expect(() => new AirlockClient({ url: "not a url" })).toThrow(TypeError);
  });

  it("wraps network errors with their cause, retries GETs after 429/5xx, never POSTs", async () => {
    const closed = new AirlockClient({
      url: `http://127.0.0.1:${await freePort()}`,
      adminToken: relay.adminToken,
      retries: 1,
    });
    const down = await rejectionOf<AirlockError>(closed.listFiles());
    expect(down).toBeInstanceOf(AirlockError);
    expect(down).toMatchObject({ status: 0, code: "network_error" });
    expect(down.message).toMatch(/^GET \/v1\/files: request failed: .*ECONNREFUSED/);
    expect(down.cause).toBeInstanceOf(Error);

    const calls: string[] = [];
    /** Statuses to answer with before passing requests through to the relay. */
    let refusals: number[] = [503, 429];
    const flaky: FetchLike = async (url, init) => {
      calls.push(`${init.method} ${new URL(url).pathname}`);
      const status = refusals.shift();
      if (status === undefined) return fetch(url, init);
      return new Response(
        JSON.stringify({ error: { code: "storage_unavailable", message: "try later" } }),
        { status, headers: { "retry-after": "0" } },
      );
    };
    const client = new AirlockClient({
      url: relay.url,
      adminToken: relay.adminToken,
      fetch: flaky,
    });
    expect(Array.isArray(await client.listFiles())).toBe(true);
    expect(calls).toEqual(["GET /v1/files", "GET /v1/files", "GET /v1/files"]);

    // Out of retries (2 by default): the last refusal is the error.
    calls.length = 0;
    refusals = [503, 503, 502];
    expect(await rejectionOf<AirlockError>(client.getFile("fil_x"))).toMatchObject({ status: 502 });
    expect(calls).toHaveLength(3);

    calls.length = 0;
    refusals = [503];
    expect(await rejectionOf<AirlockError>(client.createSession())).toMatchObject({
      status: 503,
      code: "storage_unavailable",
      message: "try later",
    });
    expect(calls).toEqual(["POST /v1/sessions"]);

    // An answer that is not the relay's JSON (a proxy's error page).
    const proxy = new AirlockClient({
      url: relay.url,
      adminToken: relay.adminToken,
      retries: 0,
      fetch: async () => new Response("<html>Bad Gateway</html>", { status: 502 }),
    });
    expect(await rejectionOf<AirlockError>(proxy.listFiles())).toMatchObject({
      status: 502,
      code: "invalid_response",
      message: "GET /v1/files: HTTP 502 <html>Bad Gateway</html>",
    });

    const aborted = await rejectionOf<AirlockError>(
      airlock.listFiles({ signal: AbortSignal.abort() }),
    );
    expect(aborted).not.toBeInstanceOf(AirlockError);
    expect((aborted as unknown as Error).name).toBe("AbortError");
  });

  describe("the built package (sdk/dist, `airlock-relay-sdk/node`) on every supported Node", () => {
    beforeAll(() => {
      execFileSync(process.execPath, [join(root, "scripts/build-sdk.mjs")], { stdio: "pipe" });
    });

    it.each(RUNTIMES)("seeds from a path and downloads to a file under $name", async ({ node }) => {
      if (!existsSync(node)) throw new Error(`missing runtime ${node}`);
      const work = await mkdtemp(join(dir, "runtime-"));
      const input = randomBytes(2 * MiB + 5);
      await writeFile(join(work, "in.bin"), input);
      const script = `
        import { AirlockClient, AirlockError } from "airlock-relay-sdk/node";
        import * as core from "airlock-relay-sdk";
        const [url, adminToken, work] = process.argv.slice(1);
        if (core.AirlockError !== AirlockError) throw new Error("two AirlockError classes");
        const airlock = new AirlockClient({ url, adminToken });
        const { sessionId, token } = await airlock.createSession();
        const item = await airlock.seedInbox(sessionId, work + "/in.bin");
        const record = await airlock.asSession(token).downloadToFile(item.file.fileId, work + "/out.bin");
        const refused = await airlock.asSession(token).deliver(item.file.fileId, { to: "slack:C1" }).catch((e) => e);
        const outputs = await airlock.listFiles({ sessionId, origin: "sandbox" });
        const inputs = await airlock.listFiles({ sessionId, origin: "seed" });
        console.log(JSON.stringify({
          sha256: record.sha256,
          code: refused instanceof AirlockError && refused.code,
          outputs: outputs.length,
          inputs: inputs.map((file) => file.fileId === item.file.fileId),
        }));
      `;
      const stdout = execFileSync(
        node,
        ["--input-type=module", "-e", script, relay.url, relay.adminToken, work],
        // The package's own directory: its name resolves to itself there, as once installed.
        { cwd: join(root, "sdk"), encoding: "utf8" },
      );
      expect(JSON.parse(stdout)).toEqual({
        sha256: sha256(input),
        code: "destination_not_allowed",
        outputs: 0,
        inputs: [true],
      });
      expect(sha256(await readFile(join(work, "out.bin")))).toBe(sha256(input));
      expect((await readdir(work)).sort()).toEqual(["in.bin", "out.bin"]);
    });
  });
});
