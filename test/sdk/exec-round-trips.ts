import { randomBytes } from "node:crypto";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  AirlockError,
  collectToLocalFile,
  pushLocalFile,
  type ExecAdapter,
} from "../../sdk/src/node";
import { rejectionOf } from "../support/rejection";
import { MiB, leftovers, mkdtemp, sha256, type ExecFixture } from "./exec-fixture";

/** 3 MiB of random bytes (gzip does not pay) and of text (it does), each with a marker. */
export const MARKER = "AIRLOCK-MARKER-7f3e9c";
export const RANDOM = Buffer.concat([Buffer.from(MARKER), randomBytes(3 * MiB)]);
export const TEXT = Buffer.from(
  Array.from(
    { length: 60_000 },
    (_, i) => `${MARKER} line ${i}: the quick brown fox ${i % 97} jumps\n`,
  ).join(""),
);

/** Push and collect round trips, byte-exact, through one adapter onto this machine's disk. */
export function roundTrips(
  fx: ExecFixture,
  name: string,
  adapter: () => ExecAdapter,
  workDir: () => string,
) {
  describe(`round trips over ${name}`, () => {
    it.each([
      ["random", RANDOM, "identity", "auto"],
      ["text", TEXT, "gzip", "always"],
    ] as const)(
      "pushes and collects 3 MiB of %s byte-exact",
      async (kind, bytes, transfer, compress) => {
        const exec = adapter();
        const dir = await mkdtemp(workDir(), `push-${kind}-`);
        const fileId = await fx.seeded(bytes, `${kind}.bin`);
        const target = join(dir, `${kind}.bin`);
        const pushed = await fx.airlock.pushFile(exec, fileId, target, { compress });
        expect(pushed.transfer).toBe(transfer);
        expect(sha256(await readFile(target))).toBe(sha256(bytes));
        expect((await stat(target)).mode & 0o777).not.toBe(0o444);
        expect(await leftovers(dir, [`${kind}.bin`])).toEqual([]);

        const before = await fx.sessionFileCount();
        const record = await fx.airlock.collectFile(exec, fx.sessionId, target, { compress });
        expect(record.sha256).toBe(sha256(bytes));
        expect(record.size).toBe(bytes.byteLength);
        expect(record.name).toBe(`${kind}.bin`);
        expect(record.sessionId).toBe(fx.sessionId);
        const back = Buffer.from(await (await fx.airlock.download(record.fileId)).arrayBuffer());
        expect(sha256(back)).toBe(sha256(bytes));
        expect(await fx.sessionFileCount()).toBe(before + 1);
        // An ordinary file: it gets share links.
        const link = await fx.suite.api(
          fx.suite.relay.adminToken,
          "POST",
          `/v1/files/${record.fileId}/links`,
          {},
        );
        expect(link.status).toBe(201);
      },
    );

    it.each([
      ["random", RANDOM, "auto", "identity"],
      ["text", TEXT, "always", "gzip"],
    ] as const)(
      "pushes a local file and collects one onto local disk, 3 MiB of %s, byte-exact",
      async (kind, bytes, compress, transfer) => {
        const exec = adapter();
        const dir = await mkdtemp(workDir(), `local-${kind}-`);
        const local = join(dir, "local.bin");
        await writeFile(local, bytes);
        const target = join(dir, "in-sandbox.bin");
        const moved = async (path: string) => {
          expect(sha256(await readFile(path))).toBe(sha256(bytes));
          return { path, size: bytes.byteLength, sha256: sha256(bytes), transfer };
        };
        const pushed = await pushLocalFile(exec, local, target, { compress });
        expect(pushed).toEqual(await moved(target));
        const back = join(dir, "back.bin");
        const collected = await collectToLocalFile(exec, target, back, { compress });
        expect(collected).toEqual(await moved(back));
        expect(await leftovers(dir, ["local.bin", "in-sandbox.bin", "back.bin"])).toEqual([]);

        const refused = await rejectionOf<AirlockError>(pushLocalFile(exec, local, target));
        expect(refused.code).toBe("target_exists");
        const missing = join(dir, "not-there.bin");
        const unreadable = await rejectionOf<AirlockError>(
          collectToLocalFile(exec, missing, join(dir, "never.bin")),
        );
        expect(unreadable.code).toBe("sandbox_file_unreadable");
        expect(unreadable.message).toContain(`not a regular file: ${missing}`);
        expect(await leftovers(dir, ["local.bin", "in-sandbox.bin", "back.bin"])).toEqual([]);
      },
    );

    it("leaves a pushed file read-only with readonly, and never replaces one unless asked", async () => {
      const exec = adapter();
      const dir = await mkdtemp(workDir(), "readonly-");
      const target = join(dir, "config.json");
      const fileId = await fx.seeded(Buffer.from('{"model":"x"}\n'), "config.json");
      await fx.airlock.pushFile(exec, fileId, target, { readonly: true });
      expect((await stat(target)).mode & 0o777).toBe(0o444);

      const other = await fx.seeded(Buffer.from("something else\n"), "other.txt");
      const refused = await rejectionOf<AirlockError>(fx.airlock.pushFile(exec, other, target));
      expect(refused).toBeInstanceOf(AirlockError);
      expect(refused.code).toBe("target_exists");
      expect(refused.message).toContain("exists (not replaced)");
      expect(await readFile(target, "utf8")).toBe('{"model":"x"}\n');
      expect(await leftovers(dir, ["config.json"])).toEqual([]);

      await fx.airlock.pushFile(exec, other, target, { overwrite: true });
      expect(await readFile(target, "utf8")).toBe("something else\n");
    });

    it("refuses to collect a file that is not there, storing nothing", async () => {
      const exec = adapter();
      const before = await fx.sessionFileCount();
      const refused = await rejectionOf<AirlockError>(
        fx.airlock.collectFile(exec, fx.sessionId, join(workDir(), "no-such-file")),
      );
      expect(refused.code).toBe("sandbox_file_unreadable");
      expect(refused.message).toContain("not a regular file");
      expect(await fx.sessionFileCount()).toBe(before);
    });
  });
}
