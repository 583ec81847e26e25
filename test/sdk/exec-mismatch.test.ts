import { randomBytes } from "node:crypto";
import { chmod, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { collectToLocalFile, dockerExec, pushLocalFile } from "../../sdk/src/node";
import { execCase } from "./exec-cases";
import { MiB, execFixture, mkdtemp, refusal, sha256, standInsFirst } from "./exec-fixture";
import { sandboxPath } from "./stand-in-cli";

/**
 * The exec transport's `transfer_mismatch` refusals: bytes changed on the way, or not written,
 * either way; the exact message, and nothing left behind at the path or at the relay.
 */
const RANDOM = randomBytes(MiB);
const FLIP_AT = 100_000;

const fx = execFixture("airlock-exec-mismatch-", 50 * MiB);
const stand = standInsFirst(fx);
const freshDir = (prefix: string) => mkdtemp(fx.suite.dir, prefix);

function flipped(bytes: Uint8Array, at: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[at] = (copy[at] ?? 0) ^ 0x01;
  return copy;
}

describe("exec transport refusals: transfer_mismatch", () => {
  it("transfer_mismatch: a push whose bytes changed on the way keeps nothing", async () => {
    const dir = await freshDir("mismatch-in-");
    const target = join(dir, "random.bin");
    const fileId = await fx.seeded(RANDOM, "random.bin");
    await stand.ins.configure({ flip: { stream: "stdin", at: FLIP_AT } });
    try {
      expect(await refusal(fx.airlock.pushFile(dockerExec("box"), fileId, target))).toEqual(
        execCase("transfer_mismatch_push", {
          target,
          got: sha256(flipped(RANDOM, FLIP_AT)),
          want: sha256(RANDOM),
        }),
      );
    } finally {
      await stand.ins.configure({});
    }
    expect(await readdir(dir)).toEqual([]);
  });

  it("transfer_mismatch: local files whose bytes changed on the way, either way, leave nothing", async () => {
    const dir = await freshDir("mismatch-local-");
    const local = join(dir, "local.bin");
    await writeFile(local, RANDOM);
    const target = join(dir, "sandbox.bin");
    const exec = dockerExec("box");
    await stand.ins.configure({ flip: { stream: "stdin", at: FLIP_AT } });
    try {
      expect(await refusal(pushLocalFile(exec, local, target, { compress: "never" }))).toEqual(
        execCase("transfer_mismatch_push", {
          target,
          got: sha256(flipped(RANDOM, FLIP_AT)),
          want: sha256(RANDOM),
        }),
      );
      expect(await readdir(dir)).toEqual(["local.bin"]);
      await stand.ins.configure({ flip: { stream: "stdout", at: FLIP_AT } });
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
      await stand.ins.configure({});
    }
  });

  it("transfer_mismatch: a push the sandbox could not write to disk keeps nothing", async () => {
    // A sandbox whose disk is full: its cat reads every byte and writes none of them.
    const fullDisk = await sandboxPath(join(fx.suite.dir, "full-disk-bin"), ["sha256sum"]);
    await rm(join(fullDisk, "cat"));
    await writeFile(
      join(fullDisk, "cat"),
      '#!/bin/sh\ndd of=/dev/null 2>/dev/null\necho "cat: write error: No space left on device" >&2\nexit 1\n',
    );
    await chmod(join(fullDisk, "cat"), 0o755);
    await stand.ins.configure({ paths: { "full-disk": fullDisk } });
    try {
      const dir = await freshDir("full-disk-");
      const target = join(dir, "random.bin");
      const fileId = await fx.seeded(RANDOM, "random.bin");
      expect(await refusal(fx.airlock.pushFile(dockerExec("full-disk"), fileId, target))).toEqual(
        execCase("transfer_mismatch_full_disk", { target, size: RANDOM.byteLength }),
      );
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await stand.ins.configure({});
    }
  });

  it("transfer_mismatch: a collect whose bytes changed on the way stores nothing", async () => {
    const dir = await freshDir("mismatch-out-");
    const path = join(dir, "random.bin");
    await writeFile(path, RANDOM);
    const header = `airlock-collect 2 ${RANDOM.byteLength} identity\n`;
    const got = sha256(flipped(RANDOM, FLIP_AT - header.length));
    const before = await fx.sessionFileCount();
    await stand.ins.configure({ flip: { stream: "stdout", at: FLIP_AT } });
    try {
      expect(await refusal(fx.airlock.collectFile(dockerExec("box"), fx.sessionId, path))).toEqual(
        execCase("transfer_mismatch_collect", {
          path,
          size: RANDOM.byteLength,
          got,
          want: sha256(RANDOM),
        }),
      );
    } finally {
      await stand.ins.configure({});
    }
    expect(await fx.sessionFileCount()).toBe(before);
  });
});
