// The Python shim's `send -`, `send --name`, `send --expires / --max-downloads` and `request`,
// against the real relay (`wrangler dev`), held to the Node shim's lines, fields and exit codes.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { USAGE } from "../../agent-shim/src/cli/help";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { relaySuite } from "../support/relay-suite";
import { failureLine, relayEnv, type ShimResult } from "./run-shim";
import { sentLine } from "./sent-line";
import { runDriver, shimDrivers, type ShimDriver } from "./shims";
import { logText, tempFilesIn } from "./shim-inputs";

const MiB = 1024 * 1024;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const secondsUntil = (iso: string) => (Date.parse(iso) - Date.now()) / 1000;

const suite = relaySuite({}, "airlock-python-parity-");
let node: ShimDriver;
let python: ShimDriver;

beforeAll(async () => {
  const drivers = await shimDrivers(suite.dir);
  node = drivers.find((d) => d.name === "node")!;
  python = drivers.find((d) => d.name === "python")!;
});

/** A fresh session (its own dedup scope and inbox) and a work directory that is also HOME. */
/** The multipart threshold the shims are given here, for a case in parts of a few tens of MiB. */
const THRESHOLD = 24 * 1024 * 1024;

async function session() {
  const { token } = await suite.relay.mintSession();
  const cwd = await mkdtemp(join(suite.dir, "work-"));
  return { token, cwd, env: relayEnv(suite.relay.url, token) };
}

type Session = Awaited<ReturnType<typeof session>>;

/** Runs a shim in `at`, with `input` piped to its standard input when given. */
function run(driver: ShimDriver, args: string[], at: Session, input?: Buffer): Promise<ShimResult> {
  return runDriver(driver, args, {
    env: at.env,
    cwd: at.cwd,
    home: at.cwd,
    input,
    timeoutMs: 240_000,
  });
}

/** The bytes a share link serves. */
async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/** `send - --name <name> --json` by both shims, each in a session of its own. */
async function sendStdinBoth(bytes: Buffer, name: string, extra: string[] = []) {
  const sent: SendResult[] = [];
  for (const driver of [node, python]) {
    const result = await run(
      driver,
      ["send", "-", "--name", name, "--json", ...extra],
      await session(),
      bytes,
    );
    sent.push(sentLine(result));
  }
  const [fromNode, fromPython] = sent as [SendResult, SendResult];
  expect(Object.keys(fromPython)).toEqual(Object.keys(fromNode));
  return { fromNode, fromPython };
}

describe("the Python shim's send -", () => {
  it.each([
    ["a small input", () => logText(20_000)],
    ["nothing at all", () => Buffer.alloc(0)],
  ])("sends %s byte-exact, as the Node shim does", async (_, make) => {
    const bytes = make();
    const { fromNode, fromPython } = await sendStdinBoth(bytes, "note.txt");
    for (const sent of [fromNode, fromPython]) {
      expect(sent).toMatchObject({
        name: "note.txt",
        size: bytes.length,
        sha256: sha256(bytes),
        status: "verified",
        deduped: false,
      });
    }
    expect(sha256(await download(fromPython.url))).toBe(sha256(bytes));
  });

  it.each([
    ["text", Buffer.from("hi\n"), "stdin.txt"],
    [
      "a PNG",
      Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), randomBytes(500)]),
      "stdin.png",
    ],
    ["bytes of no known type", Buffer.concat([Buffer.alloc(1), randomBytes(500)]), "stdin.bin"],
    ["a few MiB of text, spooled", logText(2 * MiB), "stdin.txt"],
  ])(
    "names %s sent as - without --name by its type, as the Node shim does",
    async (_, bytes, name) => {
      for (const driver of [node, python]) {
        const sent = sentLine(await run(driver, ["send", "-", "--json"], await session(), bytes));
        expect(sent, driver.name).toMatchObject({
          name,
          size: bytes.length,
          sha256: sha256(bytes),
        });
      }
    },
  );

  it("gzips a few MiB of text while streaming it, byte-exact", async () => {
    const at = await session();
    const bytes = logText(3 * MiB + 17);
    const sent = sentLine(
      await run(python, ["send", "-", "--name", "build.log", "--json"], at, bytes),
    );
    expect(await tempFilesIn(at.cwd)).toEqual([]);
    expect(sent).toMatchObject({ name: "build.log", size: bytes.length, sha256: sha256(bytes) });
    // Stored gzipped: far fewer bytes went up than were read.
    expect(sent.uploadedBytes).toBeGreaterThan(0);
    expect(sent.uploadedBytes).toBeLessThan(bytes.length / 3);
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });

  it(
    "sends random bytes over the multipart threshold byte-exact",
    { timeout: 300_000 },
    async () => {
      // The threshold the shim is given (24 MiB; 64 MiB by default) keeps the bytes few.
      const at = await session();
      at.env = { ...at.env, AIRLOCK_MULTIPART_THRESHOLD: String(THRESHOLD) };
      const bytes = randomBytes(THRESHOLD + 12_345);
      const result = await run(
        python,
        ["send", "-", "--name", "dump.bin", "--json", "--wait"],
        at,
        bytes,
      );
      const sent = sentLine(result);
      expect(sent).toMatchObject({
        name: "dump.bin",
        size: bytes.length,
        sha256: sha256(bytes),
        status: "verified",
        uploadedBytes: bytes.length,
      });
      expect(sha256(await download(sent.url))).toBe(sha256(bytes));
      expect(await tempFilesIn(at.cwd)).toEqual([]);
    },
  );

  it("renames one file with --name, as the Node shim does", async () => {
    const bytes = randomBytes(5000);
    const sent: SendResult[] = [];
    for (const driver of [node, python]) {
      const at = await session();
      await writeFile(join(at.cwd, "out.bin"), bytes);
      sent.push(
        sentLine(await run(driver, ["send", "out.bin", "--name", "renamed.bin", "--json"], at)),
      );
    }
    expect(Object.keys(sent[1]!)).toEqual(Object.keys(sent[0]!));
    for (const one of sent)
      expect(one).toMatchObject({ name: "renamed.bin", sha256: sha256(bytes) });
    expect(sha256(await download(sent[1]!.url))).toBe(sha256(bytes));
  });

  it.each([
    [["send", "-", "-"], /^airlock: - \(standard input\) can be sent only once; usage: /],
    [
      ["send", "a.bin", "b.bin", "--name", "x.bin"],
      /^airlock: --name names one file; give one path or -; usage: /,
    ],
    [["send", "-", "--name", "../up.txt"], /^airlock: --name "\.\.\/up\.txt" must not contain/],
    [["send", "-", "--name", ".."], /^airlock: --name "\.\." must not be "\." or "\.\."; usage: /],
    [
      ["send", "a.bin", "--max-downloads", "2.5"],
      /^airlock: --max-downloads must be a whole number/,
    ],
    [["send", "a.bin", "--expires", "soon"], /^airlock: --expires soon is not a duration/],
  ])("refuses %j with the Node shim's line and exit 2, sending nothing", async (args, line) => {
    const stderr: string[] = [];
    for (const driver of [node, python]) {
      const at = await session();
      for (const name of ["a.bin", "b.bin"]) await writeFile(join(at.cwd, name), randomBytes(100));
      const result = await run(driver, args, at, Buffer.from("hello"));
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      stderr.push(failureLine(result));
      expect((await suite.api(at.token, "GET", "/v1/files")).body.files).toEqual([]);
    }
    expect(stderr[0]).toMatch(line);
    expect(stderr[1]).toBe(stderr[0]);
  });
});

describe("the Python shim's send --expires / --max-downloads", () => {
  it("prints a link that serves once under --max-downloads 1, its expiry in --json", async () => {
    const bytes = randomBytes(40_000);
    const args = ["--expires", "2h", "--max-downloads", "1"];
    const { fromNode, fromPython } = await sendStdinBoth(bytes, "once.bin", args);
    for (const sent of [fromNode, fromPython]) {
      expect(sent.sha256).toBe(sha256(bytes));
      // The link lives two hours; the file the relay's FILE_TTL_SECONDS (7 days by default).
      expect(secondsUntil(sent.expiresAt)).toBeGreaterThan(2 * 3600 - 300);
      expect(secondsUntil(sent.expiresAt)).toBeLessThanOrEqual(2 * 3600);
      expect(secondsUntil(sent.fileExpiresAt)).toBeGreaterThan(6 * 86400);
      expect(sha256(await download(sent.url))).toBe(sha256(bytes));
      const second = await fetch(sent.url);
      expect(second.status).toBe(410);
      expect(((await second.json()) as { error: { code: string } }).error.code).toBe(
        "link_exhausted",
      );
    }
  });

  it("prints the minted link as the bare URL without --json", async () => {
    const at = await session();
    const bytes = randomBytes(3000);
    await writeFile(join(at.cwd, "plain.bin"), bytes);
    const result = await run(python, ["send", "plain.bin", "--max-downloads", "1"], at);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+\n$/);
    const url = result.stdout.trim();
    expect(sha256(await download(url))).toBe(sha256(bytes));
    expect((await fetch(url)).status).toBe(410);
  });
});

interface UploadRequest {
  requestId: string;
  url: string;
  name: string | null;
  maxBytes: number;
  expiresAt: string;
}

describe("the Python shim's request", () => {
  it("prints an upload link a PUT fills, and pull then writes the bytes", async () => {
    const at = await session();
    const result = await run(python, ["request"], at);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/u\/[A-Za-z0-9_-]{43}\n$/);
    expect(result.stderr).toBe(
      `from a terminal: curl --fail-with-body -T <file> ${result.stdout.trim()}/\n`,
    );
    const bytes = randomBytes(70_000);
    const put = await fetch(`${result.stdout.trim()}?name=answer.bin`, {
      method: "PUT",
      body: bytes,
    });
    expect(put.status).toBe(201);
    expect(await put.json()).toEqual({
      name: "answer.bin",
      size: bytes.length,
      sha256: sha256(bytes),
    });
    const dir = join(at.cwd, "inbox");
    const pulled = await run(python, ["pull", "--dir", dir], at);
    expect(pulled.stderr).toBe("");
    expect(pulled.code).toBe(0);
    expect(await readdir(dir)).toEqual(["answer.bin"]);
    expect(sha256(await readFile(join(dir, "answer.bin")))).toBe(sha256(bytes));
  });

  it("--json: the Node shim's fields, with --name, --max-bytes and --expires sent", async () => {
    const args = [
      "request",
      "--name",
      "invoice.pdf",
      "--max-bytes",
      "1M",
      "--expires",
      "1h",
      "--json",
    ];
    const created: UploadRequest[] = [];
    for (const driver of [node, python]) {
      const result = await run(driver, args, await session());
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout.endsWith("\n")).toBe(true);
      expect(result.stdout.trim().split("\n")).toHaveLength(1);
      created.push(JSON.parse(result.stdout) as UploadRequest);
    }
    const [fromNode, fromPython] = created as [UploadRequest, UploadRequest];
    expect(Object.keys(fromPython)).toEqual(Object.keys(fromNode));
    expect(Object.keys(fromPython).sort()).toEqual(
      ["expiresAt", "maxBytes", "name", "requestId", "url"].sort(),
    );
    expect(fromPython).toMatchObject({ name: "invoice.pdf", maxBytes: MiB });
    expect(secondsUntil(fromPython.expiresAt)).toBeGreaterThan(3600 - 300);
    expect(secondsUntil(fromPython.expiresAt)).toBeLessThanOrEqual(3600);
    // The link takes no more than --max-bytes.
    const over = await fetch(fromPython.url, { method: "PUT", body: randomBytes(MiB + 1) });
    expect(over.status).toBe(413);
  });

  it.each([
    [["request", "extra"], /^airlock: request takes no arguments; usage: /],
    [["request", "--max-bytes", "lots"], /^airlock: --max-bytes needs a positive number/],
    [["request", "--expires", "soon"], /^airlock: --expires soon is not a duration/],
    [["request", "--bogus"], /^airlock: unknown option '--bogus'; usage: /],
  ])("refuses %j with the Node shim's line and exit 2", async (args, line) => {
    const at = await session();
    const [fromNode, fromPython] = [await run(node, args, at), await run(python, args, at)];
    for (const result of [fromNode, fromPython]) {
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
    }
    expect(failureLine(fromNode)).toMatch(line);
    expect(failureLine(fromPython)).toBe(failureLine(fromNode));
  });
});

describe("the Python shim's help", () => {
  it("lists every usage line of the Node shim but tool-schema's", async () => {
    const at = await session();
    const help = await run(python, ["--help"], at);
    expect(help.code).toBe(0);
    const { toolSchema, global, ...commands } = USAGE;
    for (const usage of Object.values(commands)) expect(help.stdout).toContain(`  ${usage}\n`);
    expect(help.stdout).not.toContain(toolSchema);
    const none = await run(python, [], at);
    expect(failureLine(none)).toBe(
      `airlock: no command given; usage: ${global.replace("|tool-schema", "")}`,
    );
  });

  it("prints the Node shim's pages, in ASCII: each command's, and the whole one but tool-schema's parts", async () => {
    const at = await session();
    const ascii = (text: string) => text.replaceAll("×", "x").replaceAll("…", "...");
    const { toolSchema } = USAGE;
    const names = Object.keys(USAGE).filter((name) => name !== "toolSchema" && name !== "global");
    for (const name of names) {
      const fromNode = await run(node, [name, "--help"], at);
      const fromPython = await run(python, [name, "--help"], at);
      expect(fromPython.code).toBe(0);
      expect(fromPython.stdout).toBe(ascii(fromNode.stdout));
      expect((await run(python, ["help", name], at)).stdout).toBe(fromPython.stdout);
    }
    const whole = ascii((await run(node, ["--help"], at)).stdout)
      .replace(`  ${toolSchema}\n`, "")
      .replace(/\n {2}tool-schema\n(?: {10}.*\n)*/, "\n")
      .replace(/Options of tool-schema\n(?: .*\n)*\n/, "")
      .replace("\n", "\n(the Python shim: the Node shim's commands but tool-schema)\n");
    expect((await run(python, ["--help"], at)).stdout).toBe(whole);
  });
});
