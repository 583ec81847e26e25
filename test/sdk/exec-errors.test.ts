import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AirlockClient,
  AirlockError,
  collectToLocalFile,
  dockerExec,
  pushLocalFile,
  pushStream,
  spawnCli,
  sshExec,
  type ExecAdapter,
} from "../../sdk/src/node";
import { freePort } from "../support/relay";
import { relaySuite } from "../support/relay-suite";
import { rejectionOf } from "../support/rejection";
import { execCase } from "./exec-cases";
import { installStandIns, sandboxPath } from "./stand-in-cli";

/**
 * Every refusal of the exec transport: its code and its exact message, and that nothing was
 * left behind (no file at the path, no temp file beside it, nothing stored at the relay).
 */
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const MiB = 1024 * 1024;
const RANDOM = randomBytes(MiB);
const FLIP_AT = 100_000;

const suite = relaySuite({}, "airlock-exec-errors-");
let airlock: AirlockClient;
let sessionId: string;
let standIns: Awaited<ReturnType<typeof installStandIns>>;
const savedPath = process.env.PATH;

beforeAll(async () => {
  airlock = new AirlockClient({ url: suite.relay.url, adminToken: suite.relay.adminToken });
  ({ sessionId } = await airlock.createSession({ quotaBytes: 50 * MiB }));
  const bin = join(suite.dir, "stand-in-bin");
  standIns = await installStandIns(bin);
  process.env.PATH = `${bin}:${savedPath ?? ""}`;
});
afterAll(() => {
  process.env.PATH = savedPath;
});

async function seeded(bytes: Uint8Array, name: string): Promise<string> {
  return (await airlock.seedInbox(sessionId, bytes, { name })).file.fileId;
}

async function sessionFileCount(): Promise<number> {
  return (await airlock.listFiles({ sessionId })).length;
}

async function freshDir(prefix: string): Promise<string> {
  const dir = join(suite.dir, `${prefix}${randomBytes(4).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

function flipped(bytes: Uint8Array, at: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[at] = (copy[at] ?? 0) ^ 0x01;
  return copy;
}

/** A refusal's code and message (and that it is an AirlockError with no HTTP status). */
async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await rejectionOf<AirlockError>(promise);
  expect(error).toBeInstanceOf(AirlockError);
  expect(error.status).toBe(0);
  return { code: error.code, message: error.message };
}

describe("exec transport refusals", () => {
  it("exec_unavailable: the adapter's CLI is not installed", async () => {
    const dir = await freshDir("unavailable-");
    const fileId = await seeded(Buffer.from("x\n"), "x.txt");
    // A path, not a name: a PATH entry the account may not search would say EACCES instead.
    const cli = join(suite.dir, "no-such-cli");
    const exec = dockerExec("box", { command: cli });
    expect(await refusal(airlock.pushFile(exec, fileId, join(dir, "x.txt")))).toEqual(
      execCase("exec_unavailable", { cli }),
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it("exec_failed: a command that fails says its stderr's last line, or its exit code", async () => {
    const fileId = await seeded(Buffer.from("x\n"), "x.txt");
    const frozen = (script: string): ExecAdapter => ({
      label: "frozen box",
      run: (_argv, stdin) => spawnCli("sh", ["-c", script], stdin),
    });
    const said = frozen('echo "starting" >&2; echo "sandbox is frozen" >&2; exit 7');
    expect(await refusal(airlock.pushFile(said, fileId, "/workspace/x.txt"))).toEqual(
      execCase("exec_failed_said"),
    );
    const silent = frozen("exit 7");
    const before = await sessionFileCount();
    expect(await refusal(airlock.collectFile(silent, sessionId, "/workspace/x.txt"))).toEqual(
      execCase("exec_failed_silent"),
    );
    expect(await sessionFileCount()).toBe(before);
  });

  it("exec_failed: ssh cannot reach the sandbox", async () => {
    const port = await freePort();
    const exec = sshExec({
      host: "127.0.0.1",
      user: "agent",
      port,
      sshArgs: ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"],
    });
    const fileId = await seeded(Buffer.from("x\n"), "x.txt");
    expect(await refusal(airlock.pushFile(exec, fileId, "/workspace/x.txt"))).toEqual(
      execCase("exec_failed_ssh", { port }),
    );
  });

  it("sandbox_cannot_verify: no sha256sum, openssl, python3 or node in the sandbox", async () => {
    const bare = await sandboxPath(join(suite.dir, "bare-bin"), []);
    await standIns.configure({ paths: { bare } });
    try {
      const dir = await freshDir("bare-");
      await writeFile(join(dir, "out.txt"), "made in the sandbox\n");
      const fileId = await seeded(Buffer.from("x\n"), "x.txt");
      const exec = dockerExec("bare");
      expect(await refusal(airlock.pushFile(exec, fileId, join(dir, "x.txt")))).toEqual(
        execCase("sandbox_cannot_verify"),
      );
      const before = await sessionFileCount();
      expect(await refusal(airlock.collectFile(exec, sessionId, join(dir, "out.txt")))).toEqual(
        execCase("sandbox_cannot_verify"),
      );
      expect(await sessionFileCount()).toBe(before);
      expect(await readdir(dir)).toEqual(["out.txt"]);
    } finally {
      await standIns.configure({});
    }
  });

  it("sandbox_cannot_decode: no stdin, and nothing in the sandbox decodes base64", async () => {
    const shaOnly = await sandboxPath(join(suite.dir, "sha-only-bin"), ["sha256sum"]);
    await standIns.configure({ paths: { "sha-only": shaOnly } });
    try {
      const dir = await freshDir("no-decoder-");
      const fileId = await seeded(Buffer.from("x\n"), "x.txt");
      const exec: ExecAdapter = { ...dockerExec("sha-only"), stdin: false };
      expect(await refusal(airlock.pushFile(exec, fileId, join(dir, "x.txt")))).toEqual(
        execCase("sandbox_cannot_decode"),
      );
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await standIns.configure({});
    }
  });

  it("too_large_for_base64: no stdin, and the file is larger than the fallback moves", async () => {
    await standIns.clear();
    const dir = await freshDir("too-large-");
    const target = join(dir, "part.bin");
    const exec: ExecAdapter = { ...dockerExec("box"), stdin: false };
    const fileId = await seeded(RANDOM.subarray(0, 300_000), "part.bin");
    expect(
      await refusal(airlock.pushFile(exec, fileId, target, { maxBase64Bytes: 100_000 })),
    ).toEqual(
      execCase("too_large_for_base64", { target, size: 300000, limit: 100000, commands: 3 }),
    );
    // The default limit, 16 MiB: refused before a byte is read or a command runs.
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(64 * 1024));
      },
    });
    const size = 16 * MiB + 1;
    expect(
      await refusal(pushStream(exec, endless, target, { sha256: "0".repeat(64), size })),
    ).toEqual(execCase("too_large_for_base64", { target, size, limit: 16 * MiB, commands: 342 }));
    expect(pulled).toBeLessThanOrEqual(1);
    expect(await standIns.calls()).toEqual([]);
    expect(await readdir(dir)).toEqual([]);
  });

  it("sandbox_file_unreadable: nothing to collect at the path", async () => {
    const dir = await freshDir("missing-");
    const before = await sessionFileCount();
    for (const path of [join(dir, "no-such-file"), dir]) {
      expect(await refusal(airlock.collectFile(dockerExec("box"), sessionId, path))).toEqual(
        execCase("sandbox_file_unreadable", { path }),
      );
    }
    expect(await sessionFileCount()).toBe(before);
  });

  it("sandbox_cannot_write: the target's directory is missing", async () => {
    const dir = await freshDir("no-dir-");
    const target = join(dir, "missing", "x.txt");
    const fileId = await seeded(Buffer.from("x\n"), "x.txt");
    expect(await refusal(airlock.pushFile(dockerExec("box"), fileId, target))).toEqual(
      execCase("sandbox_cannot_write", { target, dir: join(dir, "missing") }),
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it("target_exists: a file at the path is left as it was", async () => {
    const dir = await freshDir("exists-");
    const target = join(dir, "config.json");
    await writeFile(target, "mine\n");
    const fileId = await seeded(Buffer.from("theirs\n"), "config.json");
    for (const exec of [dockerExec("box"), { ...dockerExec("box"), stdin: false }]) {
      expect(await refusal(airlock.pushFile(exec, fileId, target))).toEqual(
        execCase("target_exists", { target }),
      );
    }
    expect(await readFile(target, "utf8")).toBe("mine\n");
    expect(await readdir(dir)).toEqual(["config.json"]);
  });

  it("transfer_mismatch: a push whose bytes changed on the way keeps nothing", async () => {
    const dir = await freshDir("mismatch-in-");
    const target = join(dir, "random.bin");
    const fileId = await seeded(RANDOM, "random.bin");
    await standIns.configure({ flip: { stream: "stdin", at: FLIP_AT } });
    try {
      expect(await refusal(airlock.pushFile(dockerExec("box"), fileId, target))).toEqual(
        execCase("transfer_mismatch_push", {
          target,
          got: sha256(flipped(RANDOM, FLIP_AT)),
          want: sha256(RANDOM),
        }),
      );
    } finally {
      await standIns.configure({});
    }
    expect(await readdir(dir)).toEqual([]);
  });

  it("transfer_mismatch: local files whose bytes changed on the way, either way, leave nothing", async () => {
    const dir = await freshDir("mismatch-local-");
    const local = join(dir, "local.bin");
    await writeFile(local, RANDOM);
    const target = join(dir, "sandbox.bin");
    const exec = dockerExec("box");
    await standIns.configure({ flip: { stream: "stdin", at: FLIP_AT } });
    try {
      expect(await refusal(pushLocalFile(exec, local, target, { compress: "never" }))).toEqual(
        execCase("transfer_mismatch_push", {
          target,
          got: sha256(flipped(RANDOM, FLIP_AT)),
          want: sha256(RANDOM),
        }),
      );
      expect(await readdir(dir)).toEqual(["local.bin"]);
      await standIns.configure({ flip: { stream: "stdout", at: FLIP_AT } });
      const back = join(dir, "back.bin");
      // No header on stdout here: the bytes start at offset 0.
      expect(await refusal(collectToLocalFile(exec, local, back, { compress: "never" }))).toEqual(
        execCase("transfer_mismatch_collect", {
          path: local,
          size: RANDOM.byteLength,
          got: sha256(flipped(RANDOM, FLIP_AT)),
          want: sha256(RANDOM),
        }),
      );
      expect(await readdir(dir)).toEqual(["local.bin"]);
    } finally {
      await standIns.configure({});
    }
  });

  it("transfer_mismatch: a push the sandbox could not write to disk keeps nothing", async () => {
    // A sandbox whose disk is full: its cat reads every byte and writes none of them.
    const fullDisk = await sandboxPath(join(suite.dir, "full-disk-bin"), ["sha256sum"]);
    await rm(join(fullDisk, "cat"));
    await writeFile(
      join(fullDisk, "cat"),
      '#!/bin/sh\ndd of=/dev/null 2>/dev/null\necho "cat: write error: No space left on device" >&2\nexit 1\n',
    );
    await chmod(join(fullDisk, "cat"), 0o755);
    await standIns.configure({ paths: { "full-disk": fullDisk } });
    try {
      const dir = await freshDir("full-disk-");
      const target = join(dir, "random.bin");
      const fileId = await seeded(RANDOM, "random.bin");
      expect(await refusal(airlock.pushFile(dockerExec("full-disk"), fileId, target))).toEqual(
        execCase("transfer_mismatch_full_disk", { target, size: RANDOM.byteLength }),
      );
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await standIns.configure({});
    }
  });

  it("transfer_mismatch: a collect whose bytes changed on the way stores nothing", async () => {
    const dir = await freshDir("mismatch-out-");
    const path = join(dir, "random.bin");
    await writeFile(path, RANDOM);
    const header = `airlock-collect 2 ${RANDOM.byteLength} identity\n`;
    const got = sha256(flipped(RANDOM, FLIP_AT - header.length));
    const before = await sessionFileCount();
    await standIns.configure({ flip: { stream: "stdout", at: FLIP_AT } });
    try {
      expect(await refusal(airlock.collectFile(dockerExec("box"), sessionId, path))).toEqual(
        execCase("transfer_mismatch_collect", {
          path,
          size: RANDOM.byteLength,
          got,
          want: sha256(RANDOM),
        }),
      );
    } finally {
      await standIns.configure({});
    }
    expect(await sessionFileCount()).toBe(before);
  });
});
