import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { startRelay, type RunningRelay } from "../support/relay";
import { startFlakyProxy } from "./flaky-proxy";
import { RUNTIMES, failureLine, prepareShim, runShim, type RunOptions, relayEnv } from "./run-shim";
import { s3Vars } from "../support/s3-vars";
import { expectRoundTripWith, logText, sendJsonWith, sha256, type Sent } from "./send-e2e-support";

beforeAll(() => prepareShim());

describe.each(["r2", "s3"] as const)("airlock against wrangler dev (%s storage)", (storage) => {
  let relay: RunningRelay;
  let s3: StrictS3 | undefined;
  let env: Record<string, string>;
  let dir: string;

  beforeAll(async () => {
    let vars: Record<string, string> | undefined;
    if (storage === "s3") {
      s3 = await startStrictS3();
      vars = s3Vars(s3);
    }
    relay = await startRelay({ storage, vars });
    const session = await relay.mintSession();
    env = relayEnv(relay.url, session.token);
    dir = await mkdtemp(join(tmpdir(), `airlock-shim-e2e-${storage}-`));
  });

  afterAll(async () => {
    await relay?.stop();
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const shim = (args: string[], options: RunOptions = {}) =>
    runShim(args, { cwd: dir, env, ...options });

  const sendJson = (path: string, node?: string) => sendJsonWith(shim, path, node);
  const expectRoundTrip = (sent: Sent, bytes: Buffer, node?: string) =>
    expectRoundTripWith(shim, dir, sent, bytes, node);

  describe.each(RUNTIMES)("under $name", ({ name: runtime, node }) => {
    const tag = `${storage} ${runtime} ${randomBytes(8).toString("hex")}`;

    it("sends random binary as it is and gets the same bytes back", async () => {
      const bytes = randomBytes(1024 * 1024 + 13);
      await writeFile(join(dir, "random.bin"), bytes);
      const sent = await sendJson("random.bin", node);
      expect(sent).toMatchObject({
        name: "random.bin",
        size: bytes.length,
        sha256: sha256(bytes),
        deduped: false,
      });
      expect(sent.uploadedBytes).toBe(bytes.length);
      expect(sent.deliveries).toEqual([]);
      // expiresAt is the link's (LINK_TTL_SECONDS, a day), fileExpiresAt the file's (7 days).
      expect(Date.parse(sent.expiresAt)).toBeGreaterThan(Date.now());
      expect(Date.parse(sent.fileExpiresAt)).toBeGreaterThan(Date.parse(sent.expiresAt));
      await expectRoundTrip(sent, bytes, node);
    });

    it("gzips compressible text, uploading under a third of its size", async () => {
      const bytes = Buffer.from(logText(tag, 20_000));
      await writeFile(join(dir, "app.log"), bytes);
      const sent = await sendJson("app.log", node);
      expect(sent).toMatchObject({ size: bytes.length, sha256: sha256(bytes), deduped: false });
      expect(sent.uploadedBytes).toBeGreaterThan(0);
      expect(sent.uploadedBytes).toBeLessThan(bytes.length / 3);
      await expectRoundTrip(sent, bytes, node);
    });

    it("sends an empty file", async () => {
      await writeFile(join(dir, "empty.txt"), "");
      const sent = await sendJson("empty.txt", node);
      expect(sent).toMatchObject({ name: "empty.txt", size: 0, sha256: sha256(Buffer.alloc(0)) });
      await expectRoundTrip(sent, Buffer.alloc(0), node);
    });

    it("keeps a non-ASCII name through send and get", async () => {
      const bytes = Buffer.from(`bonjour ${tag}\n`);
      await writeFile(join(dir, "résumé ✓.txt"), bytes);
      const sent = await sendJson("résumé ✓.txt", node);
      expect(sent.name).toBe("résumé ✓.txt");
      await expectRoundTrip(sent, bytes, node);
    });

    it("reports a dedup hit with nothing uploaded when the content is sent again", async () => {
      const bytes = randomBytes(200_000);
      await writeFile(join(dir, "twice.bin"), bytes);
      const first = await sendJson("twice.bin", node);
      expect(first).toMatchObject({ deduped: false, uploadedBytes: bytes.length });
      const again = await sendJson("twice.bin", node);
      expect(again).toMatchObject({ deduped: true, uploadedBytes: 0, sha256: first.sha256 });
      expect(again.fileId).not.toBe(first.fileId);
    });

    it("fails with one line and exit 1 on a bad token", async () => {
      await writeFile(join(dir, "hello.txt"), `hello ${tag}\n`);
      const result = await shim(["send", "hello.txt"], {
        node,
        env: { ...env, AIRLOCK_TOKEN: "not-a-token" },
      });
      expect(result.code).toBe(1);
      expect(failureLine(result)).toMatch(/^airlock: relay refused upload of hello\.txt: \w+/);
      expect(result.stdout).toBe("");
    });
  });

  it("prints one share URL per file without --json, and lists them with ls", async () => {
    await writeFile(join(dir, "one.txt"), `one ${randomBytes(8).toString("hex")}\n`);
    await writeFile(join(dir, "two.txt"), `two ${randomBytes(8).toString("hex")}\n`);
    const sent = await shim(["send", "one.txt", "two.txt"]);
    expect(sent.code).toBe(0);
    const urls = sent.stdout.trim().split("\n");
    expect(urls).toHaveLength(2);
    for (const url of urls) expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+$/);

    const listed = await shim(["ls", "--json"]);
    expect(listed.code).toBe(0);
    const names = listed.stdout
      .trim()
      .split("\n")
      .map((line) => (JSON.parse(line) as Sent).name);
    expect(names).toEqual(expect.arrayContaining(["one.txt", "two.txt"]));
    const table = await shim(["ls"]);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+SIZE\s+EXPIRES\s+NAME$/);
    expect(table.stdout).toContain("two.txt");
  });

  it("writes to stdout with -o - and refuses to overwrite unless -o names the file", async () => {
    const bytes = randomBytes(70_000);
    await writeFile(join(dir, "out.bin"), bytes);
    const sent = await sendJson("out.bin");
    const piped = await shim(["get", sent.fileId, "-o", "-"]);
    expect(piped.code).toBe(0);
    expect(sha256(piped.stdoutBytes)).toBe(sha256(bytes));
    expect(piped.stderrLines).toEqual(["wrote out.bin to stdout"]);

    const refused = await shim(["get", sent.fileId]);
    expect(refused.code).toBe(1);
    expect(failureLine(refused)).toBe(
      "airlock: out.bin already exists; name it with -o to overwrite it",
    );
    await writeFile(join(dir, "out.bin"), "stale");
    const overwritten = await shim(["get", sent.fileId, "-o", "out.bin"]);
    expect(overwritten.code).toBe(0);
    expect(sha256(await readFile(join(dir, "out.bin")))).toBe(sha256(bytes));
  });

  it("gzips only where it pays and declares the type read from magic bytes", async () => {
    const tag = randomBytes(8).toString("hex");
    const files = {
      // Compressible, but under 1 KiB.
      "tiny.txt": Buffer.from(`${tag}\n${"a".repeat(900)}`),
      // Compressible after its signature, but PNG data is compressed already.
      "picture.dat": Buffer.concat([
        Buffer.from("89504e470d0a1a0a", "hex"),
        Buffer.alloc(100_000),
        Buffer.from(tag),
      ]),
      // PDF is not on the compressed list, and this one shrinks well.
      "doc.bin": Buffer.from(`%PDF-1.4\n${tag}\n${"BT /F1 12 Tf (hello) Tj ET\n".repeat(4000)}`),
      "noise.bin": randomBytes(50_000),
    };
    for (const [name, bytes] of Object.entries(files)) await writeFile(join(dir, name), bytes);
    const result = await shim(["send", "--json", ...Object.keys(files)]);
    expect(result.stderr, result.stderr).toBe("");
    const sent = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Sent);
    const uploaded = Object.fromEntries(sent.map((s) => [s.name, s.uploadedBytes]));
    expect(uploaded["tiny.txt"]).toBe(files["tiny.txt"].length);
    expect(uploaded["picture.dat"]).toBe(files["picture.dat"].length);
    expect(uploaded["doc.bin"]).toBeLessThan(files["doc.bin"].length / 3);
    expect(uploaded["noise.bin"]).toBe(files["noise.bin"].length);

    const listed = await shim(["ls", "--json"]);
    const types = Object.fromEntries(
      listed.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Sent & { contentType: string })
        .filter((file) => sent.some((s) => s.fileId === file.fileId))
        .map((file) => [file.name, file.contentType]),
    );
    expect(types).toEqual({
      "tiny.txt": "text/plain; charset=utf-8",
      "picture.dat": "image/png",
      "doc.bin": "application/pdf",
      "noise.bin": "application/octet-stream",
    });
  });

  it("refuses bytes that do not match the ETag and leaves no file behind", async () => {
    const bytes = randomBytes(10_000);
    await writeFile(join(dir, "genuine.bin"), bytes);
    const sent = await sendJson("genuine.bin");
    const proxy = await startFlakyProxy(relay.url, (method, path) =>
      path.endsWith("/content")
        ? { status: 200, headers: { etag: `"${sent.sha256}"` }, body: "tampered" }
        : undefined,
    );
    try {
      const into = await mkdtemp(join(dir, "tampered-"));
      const result = await shim(["get", sent.fileId], {
        cwd: into,
        env: { ...env, AIRLOCK_URL: proxy.url },
      });
      expect(result.code).toBe(1);
      expect(failureLine(result)).toBe(
        "airlock: the download of genuine.bin is corrupt: its SHA-256 does not match the ETag",
      );
      expect(await readdir(into)).toEqual([]);
    } finally {
      await proxy.stop();
    }
  });

  it("retries through 503, 429 and a dropped connection, and still sends the file", async () => {
    const proxy = await startFlakyProxy(relay.url, (method, path, seenBefore) => {
      if (seenBefore > 0) return undefined;
      if (method === "POST" && path === "/v1/uploads")
        return { status: 503, body: '{"error":{"code":"unavailable","message":"try later"}}' };
      if (method === "PUT") return "reset";
      if (path.endsWith("/complete")) return { status: 429, headers: { "retry-after": "0" } };
      return undefined;
    });
    try {
      // Over the one-request limit: hashed, probed, declared, PUT and completed.
      const bytes = randomBytes(2 * 1024 * 1024);
      await writeFile(join(dir, "flaky.bin"), bytes);
      const result = await shim(["send", "flaky.bin", "--json"], {
        env: { ...env, AIRLOCK_URL: proxy.url },
      });
      expect(result.stderr, result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ sha256: sha256(bytes), deduped: false });
      const faults = proxy.log
        .filter((entry) => entry.fault)
        .map((entry) => `${entry.request.split(" ")[0]} ${entry.fault}`);
      expect(faults).toEqual(expect.arrayContaining(["POST 503", "POST 429"]));
      // R2 upload URLs point at the relay, so the PUT passes through the proxy; S3's do not.
      if (storage === "r2") expect(faults).toContain("PUT reset");
    } finally {
      await proxy.stop();
    }
  });

  it("retries a small file's one request through 503 and a dropped connection", async () => {
    const proxy = await startFlakyProxy(relay.url, (method, path, seenBefore) => {
      if (method !== "POST" || path !== "/v1/single-uploads") return undefined;
      if (seenBefore === 0)
        return { status: 503, body: '{"error":{"code":"unavailable","message":"try later"}}' };
      return seenBefore === 1 ? "reset" : undefined;
    });
    try {
      const bytes = randomBytes(300_000);
      await writeFile(join(dir, "flaky-small.bin"), bytes);
      const result = await shim(["send", "flaky-small.bin", "--json"], {
        env: { ...env, AIRLOCK_URL: proxy.url },
      });
      expect(result.stderr, result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({
        sha256: sha256(bytes),
        deduped: false,
        status: "verified",
        uploadedBytes: bytes.length,
      });
      expect(proxy.log.map((entry) => `${entry.request} ${entry.fault ?? "ok"}`)).toEqual([
        "POST /v1/single-uploads 503",
        "POST /v1/single-uploads reset",
        "POST /v1/single-uploads ok",
      ]);
    } finally {
      await proxy.stop();
    }
  });

  it("names the relay's refusal and does not retry it", async () => {
    const proxy = await startFlakyProxy(relay.url, (method, path) =>
      method === "POST" && (path === "/v1/uploads" || path === "/v1/single-uploads")
        ? {
            status: 413,
            body: '{"error":{"code":"file_too_large","message":"too big for this relay"}}',
          }
        : undefined,
    );
    try {
      await writeFile(join(dir, "report.pdf"), "%PDF-1.4\n");
      const result = await shim(["send", "report.pdf"], {
        env: { ...env, AIRLOCK_URL: proxy.url },
      });
      expect(result.code).toBe(1);
      expect(failureLine(result)).toBe(
        "airlock: relay refused upload of report.pdf: file_too_large: too big for this relay",
      );
      expect(proxy.log).toHaveLength(1);
    } finally {
      await proxy.stop();
    }
  });

  it("gives up after the configured attempts when the relay keeps failing", async () => {
    const proxy = await startFlakyProxy(relay.url, () => ({ status: 503 }));
    try {
      await writeFile(join(dir, "down.txt"), "down\n");
      const result = await shim(["send", "down.txt"], { env: { ...env, AIRLOCK_URL: proxy.url } });
      expect(result.code).toBe(1);
      expect(failureLine(result)).toBe(
        "airlock: relay error during upload of down.txt: HTTP 503 Service Unavailable (after 3 attempts)",
      );
      expect(proxy.log).toHaveLength(3);
    } finally {
      await proxy.stop();
    }
  });
});
