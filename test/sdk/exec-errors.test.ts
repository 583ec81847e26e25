import { randomBytes } from "node:crypto";
import { readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { dockerExec, pushStream, spawnCli, sshExec, type ExecAdapter } from "../../sdk/src/node";
import { freePort } from "../support/free-port";
import { execCase } from "./exec-cases";
import { MiB, execFixture, mkdtemp, refusal, standInsFirst } from "./exec-fixture";
import { sandboxPath } from "./stand-in-cli";

/**
 * Every refusal of the exec transport: its code and its exact message, and that nothing was
 * left behind (no file at the path, no temp file beside it, nothing stored at the relay).
 */
const RANDOM = randomBytes(MiB);

const fx = execFixture("airlock-exec-errors-", 50 * MiB);
const stand = standInsFirst(fx);
const freshDir = (prefix: string) => mkdtemp(fx.suite.dir, prefix);

describe("exec transport refusals", () => {
  it("exec_unavailable: the adapter's CLI is not installed", async () => {
    const dir = await freshDir("unavailable-");
    const fileId = await fx.seeded(Buffer.from("x\n"), "x.txt");
    // A path, not a name: a PATH entry the account may not search would say EACCES instead.
    const cli = join(fx.suite.dir, "no-such-cli");
    const exec = dockerExec("box", { command: cli });
    expect(await refusal(fx.airlock.pushFile(exec, fileId, join(dir, "x.txt")))).toEqual(
      execCase("exec_unavailable", { cli }),
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it("exec_failed: a command that fails says its stderr's last line, or its exit code", async () => {
    const fileId = await fx.seeded(Buffer.from("x\n"), "x.txt");
    const frozen = (script: string): ExecAdapter => ({
      label: "frozen box",
      run: (_argv, stdin) => spawnCli("sh", ["-c", script], stdin),
    });
    const said = frozen('echo "starting" >&2; echo "sandbox is frozen" >&2; exit 7');
    expect(await refusal(fx.airlock.pushFile(said, fileId, "/workspace/x.txt"))).toEqual(
      execCase("exec_failed_said"),
    );
    const silent = frozen("exit 7");
    const before = await fx.sessionFileCount();
    expect(await refusal(fx.airlock.collectFile(silent, fx.sessionId, "/workspace/x.txt"))).toEqual(
      execCase("exec_failed_silent"),
    );
    expect(await fx.sessionFileCount()).toBe(before);
  });

  it("exec_failed: ssh cannot reach the sandbox", async () => {
    const port = await freePort();
    const exec = sshExec({
      host: "127.0.0.1",
      user: "agent",
      port,
      sshArgs: ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"],
    });
    const fileId = await fx.seeded(Buffer.from("x\n"), "x.txt");
    expect(await refusal(fx.airlock.pushFile(exec, fileId, "/workspace/x.txt"))).toEqual(
      execCase("exec_failed_ssh", { port }),
    );
  });

  it("sandbox_cannot_verify: no sha256sum, openssl, python3 or node in the sandbox", async () => {
    const bare = await sandboxPath(join(fx.suite.dir, "bare-bin"), []);
    await stand.ins.configure({ paths: { bare } });
    try {
      const dir = await freshDir("bare-");
      await writeFile(join(dir, "out.txt"), "made in the sandbox\n");
      const fileId = await fx.seeded(Buffer.from("x\n"), "x.txt");
      const exec = dockerExec("bare");
      expect(await refusal(fx.airlock.pushFile(exec, fileId, join(dir, "x.txt")))).toEqual(
        execCase("sandbox_cannot_verify"),
      );
      const before = await fx.sessionFileCount();
      expect(
        await refusal(fx.airlock.collectFile(exec, fx.sessionId, join(dir, "out.txt"))),
      ).toEqual(execCase("sandbox_cannot_verify"));
      expect(await fx.sessionFileCount()).toBe(before);
      expect(await readdir(dir)).toEqual(["out.txt"]);
    } finally {
      await stand.ins.configure({});
    }
  });

  it("sandbox_cannot_decode: no stdin, and nothing in the sandbox decodes base64", async () => {
    const shaOnly = await sandboxPath(join(fx.suite.dir, "sha-only-bin"), ["sha256sum"]);
    await stand.ins.configure({ paths: { "sha-only": shaOnly } });
    try {
      const dir = await freshDir("no-decoder-");
      const fileId = await fx.seeded(Buffer.from("x\n"), "x.txt");
      const exec: ExecAdapter = { ...dockerExec("sha-only"), stdin: false };
      expect(await refusal(fx.airlock.pushFile(exec, fileId, join(dir, "x.txt")))).toEqual(
        execCase("sandbox_cannot_decode"),
      );
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await stand.ins.configure({});
    }
  });

  it("too_large_for_base64: no stdin, and the file is larger than the fallback moves", async () => {
    await stand.ins.clear();
    const dir = await freshDir("too-large-");
    const target = join(dir, "part.bin");
    const exec: ExecAdapter = { ...dockerExec("box"), stdin: false };
    const fileId = await fx.seeded(RANDOM.subarray(0, 300_000), "part.bin");
    expect(
      await refusal(fx.airlock.pushFile(exec, fileId, target, { maxBase64Bytes: 100_000 })),
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
    expect(await stand.ins.calls()).toEqual([]);
    expect(await readdir(dir)).toEqual([]);
  });

  it("sandbox_file_unreadable: nothing to collect at the path", async () => {
    const dir = await freshDir("missing-");
    const before = await fx.sessionFileCount();
    for (const path of [join(dir, "no-such-file"), dir]) {
      expect(await refusal(fx.airlock.collectFile(dockerExec("box"), fx.sessionId, path))).toEqual(
        execCase("sandbox_file_unreadable", { path }),
      );
    }
    expect(await fx.sessionFileCount()).toBe(before);
  });

  it("sandbox_cannot_write: the target's directory is missing", async () => {
    const dir = await freshDir("no-dir-");
    const target = join(dir, "missing", "x.txt");
    const fileId = await fx.seeded(Buffer.from("x\n"), "x.txt");
    expect(await refusal(fx.airlock.pushFile(dockerExec("box"), fileId, target))).toEqual(
      execCase("sandbox_cannot_write", { target, dir: join(dir, "missing") }),
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it("target_exists: a file at the path is left as it was", async () => {
    const dir = await freshDir("exists-");
    const target = join(dir, "config.json");
    await writeFile(target, "mine\n");
    const fileId = await fx.seeded(Buffer.from("theirs\n"), "config.json");
    for (const exec of [dockerExec("box"), { ...dockerExec("box"), stdin: false }]) {
      expect(await refusal(fx.airlock.pushFile(exec, fileId, target))).toEqual(
        execCase("target_exists", { target }),
      );
    }
    expect(await readFile(target, "utf8")).toBe("mine\n");
    expect(await readdir(dir)).toEqual(["config.json"]);
  });
});
