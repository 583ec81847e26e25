// One contract, three shims: the Node bundle, the Python shim (with only python3 on PATH) and the
// POSIX sh shim under dash run the same cases against the real relay (`wrangler dev`), and the
// multipart cases against the fake relay. What a shim does not do is named as unsupported and its
// refusal checked: one stderr line, a non-zero exit, nothing done.
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { humanSize } from "../../src/services/human-size";
import { cleanFileName } from "../../src/names";
import { relaySuite } from "../support/relay-suite";
import { TOKEN, startFakeRelay, type FakeRelay } from "./fake-relay";
import { failureLine, relayEnv, type ShimResult } from "./run-shim";
import { runDriver, shimDrivers, type Feature, type ShimDriver } from "./shims";
import { buildTree, listTree, rawTarGz } from "./tar-trees";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const MiB = 1024 * 1024;

const SEND_JSON_FIELDS = [
  "fileId",
  "name",
  "size",
  "sha256",
  "url",
  "expiresAt",
  "fileExpiresAt",
  "status",
  "deduped",
  "uploadedBytes",
  "deliveries",
];
const PULL_JSON_FIELDS = ["itemId", "fileId", "name", "size", "sha256", "path", "source"];

/** Distinct from the relay's default, so that the link's expiry is told from the file's. */
const LINK_TTL_SECONDS = 7200;
const FILE_TTL_SECONDS = 7 * 86400;

const suite = relaySuite(
  {
    vars: {
      LINK_TTL_SECONDS: String(LINK_TTL_SECONDS),
      FILE_TTL_SECONDS: String(FILE_TTL_SECONDS),
    },
  },
  "airlock-contract-",
);
let drivers: ShimDriver[];

beforeAll(async () => {
  drivers = await shimDrivers(suite.dir);
}, 60_000);

/**
 * What each shim printed for a case that all must word alike (its one line, the key order of
 * `send --json`), compared once every shim has run (`afterAll`), so the check does not depend
 * on which shim's cases ran first.
 */
const printed = new Map<string, Map<string, string>>();
/** Cases the POSIX shim words alike too (the others are the Python shim's alone). */
const posixToo = new Set<string>();
function sameAsNode(driver: ShimDriver, key: string, line: string, withPosix = false): void {
  const byShim = printed.get(key) ?? new Map<string, string>();
  printed.set(key, byShim);
  byShim.set(driver.name, line);
  if (withPosix) posixToo.add(key);
}

afterAll(() => {
  for (const [key, byShim] of printed) {
    const node = byShim.get("node");
    for (const [shim, line] of byShim)
      if (node !== undefined && (shim !== "posix" || posixToo.has(key)))
        expect(line, `${shim}: ${key}`).toBe(node);
  }
});

/** An unsupported feature's refusal: exit 2, nothing on stdout, one line naming what. */
function expectRefusal(result: ShimResult, what: RegExp): void {
  expect(result.stdout).toBe("");
  expect(failureLine(result)).toMatch(what);
  expect(result.code).not.toBe(0);
}

async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

describe.each(["node", "python", "posix"] as const)("the %s shim against the relay", (name) => {
  let driver: ShimDriver;
  let token: string;
  let sessionId: string;
  let work: string;
  let home: string;

  beforeAll(async () => {
    driver = drivers.find((d) => d.name === name)!;
    const session = await suite.relay.mintSession();
    token = session.token;
    sessionId = session.sessionId;
    work = await mkdtemp(join(suite.dir, `${name}-work-`));
    home = await mkdtemp(join(suite.dir, `${name}-home-`));
  });

  const airlock = (args: string[], extra: Record<string, string> = {}) =>
    runDriver(driver, args, {
      env: { ...relayEnv(suite.relay.url, token), ...extra },
      cwd: work,
      home,
    });
  const supports = (feature: Feature) => driver.unsupported[feature] === undefined;
  const sendJson = async (path: string) => {
    const result = await airlock(["send", "--json", path]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]!) as Record<string, unknown>;
  };
  const seed = async (seedName: string, bytes: Uint8Array) => {
    const query = `name=${encodeURIComponent(seedName)}`;
    const response = await fetch(`${suite.relay.url}/v1/sessions/${sessionId}/inbox?${query}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${suite.relay.adminToken}`,
        "content-length": String(bytes.length),
      },
      body: bytes,
    });
    expect(response.status, await response.clone().text()).toBe(201);
  };
  /** Acknowledges whatever an earlier case left in the inbox. */
  const drainInbox = async () => {
    const listed = await suite.api(token, "GET", "/v1/inbox");
    for (const item of listed.body.items as { itemId: string }[]) {
      expect((await suite.api(token, "POST", `/v1/inbox/${item.itemId}/ack`)).status).toBe(200);
    }
  };
  const filesBySha = async (sha: string) => {
    const answer = await suite.api(token, "GET", "/v1/files");
    expect(answer.status).toBe(200);
    const files = answer.body.files as { sha256: string; deduped: boolean; fileId: string }[];
    return files.filter((f) => f.sha256 === sha);
  };

  it("sends a file byte-exact (SHA-256 of the bytes behind the share URL)", async () => {
    const bytes = randomBytes(300_000);
    await writeFile(join(work, "random.bin"), bytes);
    const result = await airlock(["send", "random.bin"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+\n$/);
    expect(sha256(await download(result.stdout.trim()))).toBe(sha256(bytes));
  });

  it("re-sends a file as a dedup hit: nothing uploaded", async () => {
    const bytes = randomBytes(200_000);
    await writeFile(join(work, "again.bin"), bytes);
    const first = await sendJson("again.bin");
    expect(first).toMatchObject({ deduped: false, uploadedBytes: bytes.length });
    const second = await sendJson("again.bin");
    expect(second).toMatchObject({ deduped: true, uploadedBytes: 0, sha256: sha256(bytes) });
    const records = await filesBySha(sha256(bytes));
    expect(records.map((r) => r.deduped).sort()).toEqual([false, true]);
  });

  it("gzips text where it pays (unsupported by the POSIX shim: sent as it is)", async () => {
    const text = Buffer.from(
      Array.from({ length: 6000 }, (_, i) => `line ${i}: the quick brown fox\n`).join(""),
    );
    await writeFile(join(work, "notes.txt"), text);
    let url: string;
    if (supports("gzip")) {
      const sent = await sendJson("notes.txt");
      expect(sent.size).toBe(text.length);
      expect(sent.uploadedBytes as number).toBeLessThan(text.length / 4);
      url = sent.url as string;
    } else {
      const result = await airlock(["send", "notes.txt"]);
      expect(result.code).toBe(0);
      url = result.stdout.trim();
    }
    expect(sha256(await download(url))).toBe(sha256(text));
  });

  it("fails on a missing file with exit 1 and one stderr line", async () => {
    const result = await airlock(["send", "nope.bin"]);
    expect(result.stdout).toBe("");
    expect(result.code).toBe(1);
    const line = failureLine(result);
    if (name === "posix") expect(line).toBe("airlock: no such file: nope.bin");
    else expect(line).toBe("airlock: cannot read nope.bin: no such file or directory");
  });

  it("fails on a bad token with exit 1, one stderr line naming the relay's refusal", async () => {
    await writeFile(join(work, "small.txt"), "small\n");
    const result = await airlock(["send", "small.txt"], { AIRLOCK_TOKEN: "not-a-token" });
    expect(result.stdout).toBe("");
    expect(result.code).toBe(1);
    const line = failureLine(result);
    expect(line).toMatch(/invalid_token/);
    sameAsNode(driver, "bad token", line);
  });

  it("fails on a missing AIRLOCK_URL with exit 2 and one stderr line", async () => {
    const result = await airlock(["send", "small.txt"], { AIRLOCK_URL: "" });
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe(
      "airlock: AIRLOCK_URL is not set; set it to the relay's base URL",
    );
  });

  it("pulls byte-exact with the context line, hostile names cleaned", async () => {
    const report = randomBytes(150_000);
    const hostile = Buffer.from("hostile\n");
    const brackets = Buffer.from("brackets\n");
    const hostileName = "../../etc/evil\u202etxt.exe";
    const bracketName = "[x] notes].txt";
    await seed("report.bin", report);
    await seed(hostileName, hostile);
    await seed(bracketName, brackets);
    const dir = join(work, "inbox");
    const result = await airlock(["pull", "--dir", dir]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const shown = (raw: string) =>
      cleanFileName(raw, "file").replace(/\[/g, "(").replace(/]/g, ")");
    const expected = [
      ["report.bin", report],
      [hostileName, hostile],
      [bracketName, brackets],
    ] as const;
    expect(result.stdout).toBe(
      expected
        .map(([raw, bytes]) => {
          const local = shown(raw);
          return `[User uploaded: ${local} (${humanSize(bytes.length)}) at ${join(dir, local)}]\n`;
        })
        .join(""),
    );
    for (const [raw, bytes] of expected) {
      expect(sha256(await readFile(join(dir, shown(raw))))).toBe(sha256(bytes));
    }
    expect((await readdir(dir)).sort()).toEqual(expected.map(([raw]) => shown(raw)).sort());
    expect(existsSync(join(work, "etc"))).toBe(false);
    // Acknowledged: a second pull finds nothing, and says so.
    const again = await airlock(["pull", "--dir", dir]);
    expect(again).toMatchObject({ code: 0, stdout: "", stderr: "nothing new in the inbox\n" });
  });

  it("prints --json lines with the same fields (the POSIX shim: send's alone)", async () => {
    const bytes = randomBytes(5000);
    await writeFile(join(work, "fields.bin"), bytes);
    await drainInbox();
    await seed("fields.bin", bytes);
    const dir = join(work, "json-inbox");
    const sent = await sendJson("fields.bin");
    expect(Object.keys(sent).sort()).toEqual([...SEND_JSON_FIELDS].sort());
    sameAsNode(driver, "send --json key order", Object.keys(sent).join(","), true);
    expect(sent).toMatchObject({ name: "fields.bin", size: 5000, sha256: sha256(bytes) });
    expect(sent.status).toBe("verified");
    expect(sent.deliveries).toEqual([]);
    if (!supports("json")) {
      // The POSIX shim's --json is send's alone.
      expectRefusal(
        await airlock(["pull", "--json", "--dir", dir]),
        /pull --json is not supported/,
      );
      expectRefusal(await airlock(["ls", "--json"]), /ls is not supported/);
      expect(existsSync(dir)).toBe(false);
      return;
    }
    const pulled = await airlock(["pull", "--json", "--dir", dir]);
    expect(pulled.stderr).toBe("");
    const record = JSON.parse(pulled.stdout) as Record<string, unknown>;
    expect(Object.keys(record)).toEqual(PULL_JSON_FIELDS);
    expect(record).toMatchObject({
      name: "fields.bin",
      size: 5000,
      sha256: sha256(bytes),
      path: join(dir, "fields.bin"),
    });
    const listed = await airlock(["ls", "--json"]);
    expect(listed.code).toBe(0);
    const ids = listed.stdout
      .trimEnd()
      .split("\n")
      .map((line) => (JSON.parse(line) as { fileId: string }).fileId);
    expect(ids).toContain(sent.fileId);
  });

  it("tells in send --json when the link stops working and when the file goes", async () => {
    const bytes = randomBytes(3000);
    await writeFile(join(work, "expiry.bin"), bytes);
    const before = Date.now();
    const sent = await sendJson("expiry.bin");
    const after = Date.now();
    const linkExpires = Date.parse(sent.expiresAt as string);
    const fileExpires = Date.parse(sent.fileExpiresAt as string);
    expect(linkExpires).toBeLessThanOrEqual(fileExpires);
    // The relay keeps a link's expiry in whole seconds.
    expect(linkExpires).toBeGreaterThanOrEqual(before - 1000 + LINK_TTL_SECONDS * 1000);
    expect(linkExpires).toBeLessThanOrEqual(after + LINK_TTL_SECONDS * 1000);
    expect(fileExpires).toBeGreaterThanOrEqual(before - 1000 + FILE_TTL_SECONDS * 1000);
    expect(fileExpires).toBeLessThanOrEqual(after + FILE_TTL_SECONDS * 1000);
    expect(sha256(await download(sent.url as string))).toBe(sha256(bytes));
  });

  it("pulls into ./uploads by default, $AIRLOCK_INBOX_DIR when set, and --dir over both", async () => {
    await drainInbox();
    const cwd = await mkdtemp(join(work, "default-dir-"));
    const fromVar = join(cwd, "from-var");
    const pullIn = (args: string[], extra: Record<string, string> = {}) =>
      runDriver(driver, ["pull", ...args], {
        env: { ...relayEnv(suite.relay.url, token), ...extra },
        cwd,
        home,
      });
    const cases: { args: string[]; env: Record<string, string>; dir: string }[] = [
      { args: [], env: {}, dir: join(cwd, "uploads") },
      { args: [], env: { AIRLOCK_INBOX_DIR: fromVar }, dir: fromVar },
      { args: [], env: { AIRLOCK_INBOX_DIR: "" }, dir: join(cwd, "uploads") },
      { args: ["--dir", "chosen"], env: { AIRLOCK_INBOX_DIR: fromVar }, dir: join(cwd, "chosen") },
    ];
    for (const [i, { args, env, dir }] of cases.entries()) {
      const bytes = randomBytes(1000 + i);
      await seed(`case-${i}.bin`, bytes);
      const result = await pullIn(args, env);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const written = join(dir, `case-${i}.bin`);
      expect(result.stdout).toBe(
        `[User uploaded: case-${i}.bin (${humanSize(bytes.length)}) at ${written}]\n`,
      );
      expect(sha256(await readFile(written))).toBe(sha256(bytes));
    }
    expect((await readdir(cwd)).sort()).toEqual(["chosen", "from-var", "uploads"]);
    expect((await readdir(join(cwd, "uploads"))).sort()).toEqual(["case-0.bin", "case-2.bin"]);
    // Nothing waiting: one line on stderr, exit 0, no directory made.
    const empty = await pullIn([], { AIRLOCK_INBOX_DIR: join(cwd, "never") });
    expect(empty).toMatchObject({ code: 0, stdout: "", stderr: "nothing new in the inbox\n" });
    expect(existsSync(join(cwd, "never"))).toBe(false);
  });

  it("gives up pull --wait after --timeout with exit 3 (unsupported by the POSIX shim)", async () => {
    await drainInbox();
    const dir = join(work, "wait-inbox");
    const result = await airlock(["pull", "--wait", "--timeout", "1s", "--dir", dir]);
    if (name === "posix") {
      expectRefusal(result, /pull --wait is not supported/);
      return;
    }
    expect(result.stdout).toBe("");
    expect(failureLine(result)).toBe("airlock: nothing arrived in the inbox within 1s");
    expect(result.code).toBe(3);
    expect(existsSync(dir)).toBe(false);
  });

  it("mints a one-download link and deletes a file (unsupported by the POSIX shim)", async () => {
    if (name === "posix") {
      expectRefusal(await airlock(["link", "fil_x"]), /link is not supported/);
      expectRefusal(await airlock(["rm", "fil_x"]), /rm is not supported/);
      return;
    }
    const bytes = randomBytes(4000);
    await writeFile(join(work, "linked.bin"), bytes);
    const sent = await sendJson("linked.bin");
    const fileId = sent.fileId as string;
    const minted = await airlock(["link", fileId, "--max-downloads", "1", "--json"]);
    expect(minted.stderr).toBe("");
    expect(minted.code).toBe(0);
    const link = JSON.parse(minted.stdout) as Record<string, unknown>;
    expect(Object.keys(link)).toEqual(["fileId", "url", "expiresAt", "maxDownloads"]);
    expect(link).toMatchObject({ fileId, maxDownloads: 1 });
    expect(sha256(await download(link.url as string))).toBe(sha256(bytes));
    expect((await fetch(link.url as string)).status).toBe(410);

    const removed = await airlock(["rm", fileId]);
    expect(removed).toMatchObject({ code: 0, stdout: `deleted ${fileId}\n`, stderr: "" });
    expect((await fetch(sent.url as string)).status).toBe(410);
    const again = await airlock(["rm", fileId]);
    expect(again.code).toBe(1);
    const line = failureLine(again);
    expect(line).toBe(
      `airlock: relay refused deleting file ${fileId}: file_not_found: no such file`,
    );
  });

  it("sends a directory as a .tar.gz and gets it back extracted (unsupported by the POSIX shim)", async () => {
    const src = await mkdtemp(join(work, "src-"));
    const tree = await buildTree(src, "proj", true);
    if (!supports("directories")) {
      const result = await airlock(["send", tree]);
      expect(result.code).toBe(1);
      expect(failureLine(result)).toMatch(/is a directory: the POSIX shim sends single files/);
      expectRefusal(await airlock(["get", "f_x", "--extract"]), /get is not supported/);
      return;
    }
    const sent = await sendJson(tree);
    expect(sent).toMatchObject({ name: "proj.tar.gz", archive: true });
    expect(sent.files).toBeGreaterThan(3);
    const out = join(work, "extracted");
    const got = await airlock(["get", sent.fileId as string, "--extract", "-o", out]);
    expect(got.stderr).toBe("");
    expect(got.code).toBe(0);
    expect(got.stdout).toBe(`${join(out, "proj")}\n`);
    expect(await listTree(join(out, "proj"))).toEqual(await listTree(tree));
  });

  it("sends a file whose name curl would read as a pattern byte-exact (notes {draft}.bin, > 1 MiB)", async () => {
    const bytes = randomBytes(MiB + 100_000);
    await writeFile(join(work, "notes {draft}.bin"), bytes);
    // What curl's globbing would send instead: `notes {draft}.bin` names `notes draft.bin`.
    await writeFile(join(work, "notes draft.bin"), randomBytes(MiB + 100_000));
    const sent = await sendJson("notes {draft}.bin");
    expect(sent).toMatchObject({ name: "notes {draft}.bin", sha256: sha256(bytes) });
    expect(sha256(await download(sent.url as string))).toBe(sha256(bytes));
  });

  it("refuses a get --extract of an archive over --max-entries, writing nothing", async () => {
    const many = rawTarGz(
      [0, 1, 2, 3, 4, 5].map((i) => ({ name: `many/${i}.txt`, body: `${i}\n` })),
    );
    await writeFile(join(work, "many.tar.gz"), many);
    const out = join(work, "many-out");
    await mkdir(out);
    if (!supports("extract")) {
      const args = ["get", "f_x", "--extract", "--max-entries", "5", "-o", out];
      expectRefusal(await airlock(args), /get is not supported/);
      return;
    }
    const sent = await sendJson("many.tar.gz");
    const get = (max: string) =>
      airlock(["get", sent.fileId as string, "--extract", "--max-entries", max, "-o", out]);
    const refused = await get("5");
    expect(refused.stdout).toBe("");
    expect(refused.code).toBe(1);
    const line = failureLine(refused);
    expect(line).toBe(
      'airlock: refusing to extract many.tar.gz: "many/5.txt" takes the archive over 5 entries ' +
        "(raise it with --max-entries); nothing was extracted",
    );
    sameAsNode(driver, "too many entries", line);
    expect(await readdir(out)).toEqual([]);
    const taken = await get("6");
    expect(taken.code, taken.stderr).toBe(0);
    expect(Object.keys(await listTree(join(out, "many"))).sort()).toHaveLength(6);
  });

  it("extracts modes within the user's umask (0777 in the archive)", async () => {
    if (!supports("extract")) return;
    const open = rawTarGz([
      { name: "open/", type: "5", mode: 0o777 },
      { name: "open/run.sh", body: "#!/bin/sh\n", mode: 0o777 },
    ]);
    await writeFile(join(work, "open.tar.gz"), open);
    const sent = await sendJson("open.tar.gz");
    const out = join(work, "open-out");
    const got = await airlock(["get", sent.fileId as string, "--extract", "-o", out]);
    expect(got.code, got.stderr).toBe(0);
    // The shims inherit this process's umask.
    const mode = (0o777 & ~process.umask()).toString(8);
    expect(await listTree(join(out, "open"), false)).toEqual({
      "run.sh": expect.stringMatching(new RegExp(`^file ${mode} `)),
    });
    expect(((await stat(join(out, "open"))).mode & 0o777).toString(8)).toBe(mode);
  });

  it("refuses a get --extract of an archive with an entry escaping its directory", async () => {
    const evil = rawTarGz([
      { name: "proj/ok.txt", body: "ok\n" },
      { name: "proj/../../escape.txt", body: "gotcha\n" },
    ]);
    await writeFile(join(work, "evil.tar.gz"), evil);
    const out = join(work, "evil-out");
    await mkdir(out);
    if (!supports("extract")) {
      expectRefusal(await airlock(["get", "f_x", "--extract", "-o", out]), /get is not supported/);
      expectRefusal(
        await airlock(["pull", "--extract", "--dir", out]),
        /--extract is not supported/,
      );
      return;
    }
    const sent = await sendJson("evil.tar.gz");
    const result = await airlock(["get", sent.fileId as string, "--extract", "-o", out]);
    expect(result.stdout).toBe("");
    expect(result.code).toBe(1);
    const line = failureLine(result);
    expect(line).toBe(
      'airlock: refusing to extract evil.tar.gz: "proj/../../escape.txt" has a .. component; nothing was extracted',
    );
    sameAsNode(driver, "escaping archive", line);
    expect(await readdir(out)).toEqual([]);
    expect(existsSync(join(work, "escape.txt"))).toBe(false);
  });
});

describe.each(["node", "python", "posix"] as const)(
  "the %s shim above the multipart threshold (fake relay)",
  (name) => {
    let driver: ShimDriver;
    let relay: FakeRelay;
    let work: string;
    let home: string;
    /**
     * Above the threshold the shims are given (AIRLOCK_MULTIPART_THRESHOLD, 24 MiB; 64 MiB by
     * default): 6 parts of 8 MiB, the last one short.
     */
    const SIZE = 40 * MiB + 1234;

    beforeAll(async () => {
      driver = drivers.find((d) => d.name === name)!;
      work = await mkdtemp(join(suite.dir, `${name}-big-`));
      home = await mkdtemp(join(suite.dir, `${name}-big-home-`));
      await writeFile(join(work, "big.bin"), randomBytes(SIZE));
    });
    beforeEach(async () => {
      relay = await startFakeRelay();
    });
    afterEach(async () => {
      await relay.stop();
    });

    const airlock = (args: string[]) =>
      runDriver(driver, args, {
        env: {
          ...relayEnv(relay.url, TOKEN, 2),
          AIRLOCK_UPLOAD_CONCURRENCY: "3",
          AIRLOCK_MULTIPART_THRESHOLD: String(24 * MiB),
        },
        cwd: work,
        home,
        timeoutMs: 300_000,
      });

    it("sends in parts, several at once, and resumes after a failed run", async () => {
      const bytes = await readFile(join(work, "big.bin"));
      const digest = sha256(bytes);
      if (driver.unsupported.multipart !== undefined) {
        // No parts: one PUT of the whole file, byte-exact all the same.
        const result = await airlock(["send", "big.bin"]);
        expect(result.stderr).toBe("");
        expect(result.code).toBe(0);
        expect(relay.routes().filter((r) => r.startsWith("PUT /part/"))).toEqual([]);
        expect([...relay.files.values()].map((f) => sha256(f.bytes))).toEqual([digest]);
        return;
      }
      relay.failPart(5, 1000);
      const failed = await airlock(["send", "--json", "big.bin"]);
      expect(failed.stdout).toBe("");
      expect(failed.code).toBe(1);
      expect(failureLine(failed)).toMatch(/part 5 of 6/);
      expect(relay.files.size).toBe(0);
      const held = relay.parts.maxInFlight;
      expect(held).toBeGreaterThan(1);

      relay.failPart(5, 0);
      const resumed = await airlock(["send", "--json", "big.bin"]);
      expect(resumed.stderr).toBe("");
      expect(resumed.code).toBe(0);
      const result = JSON.parse(resumed.stdout) as Record<string, unknown>;
      expect(result).toMatchObject({ size: SIZE, sha256: digest, deduped: false });
      expect(result.uploadedBytes as number).toBeGreaterThan(0);
      expect(result.uploadedBytes as number).toBeLessThan(SIZE);
      expect(relay.routes().some((r) => /^GET \/v1\/uploads\/[^/]+$/.test(r))).toBe(true);
      expect([...relay.files.values()].map((f) => sha256(f.bytes))).toEqual([digest]);
    }, 600_000);
  },
);
