import { readFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AirlockError,
  collectToLocalFile,
  dockerExec,
  kubectlExec,
  pushLocalFile,
  type ExecAdapter,
} from "../../sdk/src/node";
import { rejectionOf } from "../support/rejection";
import { MiB, execFixture, mkdtemp, sha256 } from "./exec-fixture";
import { MARKER, RANDOM, TEXT, roundTrips } from "./exec-round-trips";
import { installStandIns, sandboxPath, type StandInCall } from "./stand-in-cli";

const fx = execFixture("airlock-exec-adapters-", 200 * MiB);

describe("the docker and kubectl adapters against stand-in CLIs", () => {
  let standIns: Awaited<ReturnType<typeof installStandIns>>;
  let pythonOnly: string;
  const savedPath = process.env.PATH;
  beforeAll(async () => {
    const bin = join(fx.suite.dir, "stand-in-bin");
    standIns = await installStandIns(bin);
    pythonOnly = await sandboxPath(join(fx.suite.dir, "python-only-bin"), ["python3"]);
    process.env.PATH = `${bin}:${savedPath ?? ""}`;
  });
  afterAll(() => {
    process.env.PATH = savedPath;
  });

  /** Calls since the last clear, and a check that no file bytes went through argv. */
  async function recorded(): Promise<StandInCall[]> {
    const calls = await standIns.calls();
    for (const call of calls) expect(call.argv.join(" ")).not.toContain(MARKER);
    return calls;
  }

  roundTrips(
    fx,
    "docker exec -i",
    () => dockerExec("box"),
    () => fx.suite.dir,
  );
  roundTrips(
    fx,
    "kubectl exec -i",
    () => kubectlExec({ pod: "pod-1", namespace: "agents", container: "main" }),
    () => fx.suite.dir,
  );

  it("runs docker exec -i <container> sh -c …, the bytes on stdin only", async () => {
    await standIns.configure({});
    await standIns.clear();
    const dir = await mkdtemp(fx.suite.dir, "argv-");
    const exec = dockerExec("box", { user: "agent" });
    const fileId = await fx.seeded(TEXT, "text.txt");
    await fx.airlock.pushFile(exec, fileId, join(dir, "text.txt"));
    const calls = await recorded();
    expect(calls.map((call) => call.argv.slice(0, 7))).toEqual([
      ["exec", "-i", "--user", "agent", "box", "sh", "-c"],
      ["exec", "-i", "--user", "agent", "box", "sh", "-c"],
    ]);
    const [, push] = calls as [StandInCall, StandInCall];
    expect(push.argv.slice(8)).toEqual([
      "airlock-push",
      join(dir, "text.txt"),
      sha256(TEXT),
      "0",
      "",
      expect.stringMatching(/^[0-9a-f]{12}$/),
      "gzip",
      String(TEXT.byteLength),
    ]);
    expect(push.argv.join(" ").length).toBeLessThan(16 * 1024);
    expect(sha256(gunzipSync(push.stdin))).toBe(sha256(TEXT));
    expect(push.stdin.byteLength).toBeLessThan(TEXT.byteLength / 4);
  });

  it("hands docker a local file as its stdin and its stdout: the same argv, the bytes exact", async () => {
    await standIns.configure({});
    await standIns.clear();
    const dir = await mkdtemp(fx.suite.dir, "fd-");
    const local = join(dir, "local.bin");
    await writeFile(local, RANDOM);
    const exec = dockerExec("box");
    await pushLocalFile(exec, local, join(dir, "pushed.bin"), { compress: "never" });
    await collectToLocalFile(exec, join(dir, "pushed.bin"), join(dir, "back.bin"), {
      compress: "never",
    });
    const calls = await recorded();
    // The probe for the sandbox's tools, the push, the collect.
    expect(calls.map((call) => call.argv.slice(0, 5))).toEqual(
      Array(3).fill(["exec", "-i", "box", "sh", "-c"]),
    );
    const [, push, collect] = calls as [StandInCall, StandInCall, StandInCall];
    expect(push.argv.slice(6, 8)).toEqual(["airlock-push", join(dir, "pushed.bin")]);
    expect(sha256(push.stdin)).toBe(sha256(RANDOM));
    expect(collect.argv.slice(6)).toEqual([
      "airlock-collect",
      join(dir, "pushed.bin"),
      "never",
      "raw",
    ]);
    expect(collect.stdin.byteLength).toBe(0);
    expect(sha256(await readFile(join(dir, "back.bin")))).toBe(sha256(RANDOM));
  });

  it("runs kubectl exec -i -n <ns> -c <container> <pod> -- sh -c …", async () => {
    await standIns.configure({});
    await standIns.clear();
    const dir = await mkdtemp(fx.suite.dir, "kargv-");
    await writeFile(join(dir, "out.bin"), RANDOM);
    const exec = kubectlExec({ pod: "pod-1", namespace: "agents", container: "main" });
    const record = await fx.airlock.collectFile(exec, fx.sessionId, join(dir, "out.bin"));
    expect(record.sha256).toBe(sha256(RANDOM));
    const calls = await recorded();
    expect(calls.map((call) => call.argv.slice(0, 10))).toEqual([
      ["exec", "-i", "-n", "agents", "-c", "main", "pod-1", "--", "sh", "-c"],
      ["exec", "-i", "-n", "agents", "-c", "main", "pod-1", "--", "sh", "-c"],
    ]);
    expect(calls[1]?.argv.slice(11)).toEqual(["airlock-collect", join(dir, "out.bin"), "auto"]);
    expect(calls.every((call) => call.stdin.byteLength === 0)).toBe(true);
  });

  it.each([
    ["random", RANDOM],
    ["text", TEXT],
  ] as const)(
    "refuses a push whose %s stream was corrupted on the way: nothing at the path",
    async (kind, bytes) => {
      await standIns.configure({ flip: { stream: "stdin", at: 100_000 } });
      try {
        const dir = await mkdtemp(fx.suite.dir, "flip-in-");
        const fileId = await fx.seeded(bytes, `${kind}.bin`);
        const refused = await rejectionOf<AirlockError>(
          fx.airlock.pushFile(dockerExec("box"), fileId, join(dir, `${kind}.bin`)),
        );
        expect(refused).toBeInstanceOf(AirlockError);
        expect(refused.code).toBe("transfer_mismatch");
        expect(refused.message).toContain("nothing was kept");
        expect(await readdir(dir)).toEqual([]);
      } finally {
        await standIns.configure({});
      }
    },
  );

  it.each([
    ["random", RANDOM],
    ["text", TEXT],
  ] as const)(
    "refuses a collect whose %s stream was corrupted on the way: nothing stored",
    async (kind, bytes) => {
      const dir = await mkdtemp(fx.suite.dir, "flip-out-");
      await writeFile(join(dir, `${kind}.bin`), bytes);
      const before = await fx.sessionFileCount();
      await standIns.configure({ flip: { stream: "stdout", at: 100_000 } });
      try {
        const refused = await rejectionOf<AirlockError>(
          fx.airlock.collectFile(dockerExec("box"), fx.sessionId, join(dir, `${kind}.bin`)),
        );
        expect(refused).toBeInstanceOf(AirlockError);
        expect(refused.code).toBe("transfer_mismatch");
        expect(refused.message).toContain("nothing was kept");
      } finally {
        await standIns.configure({});
      }
      expect(await fx.sessionFileCount()).toBe(before);
    },
  );

  it("verifies with python3 in a sandbox without sha256sum, openssl, node or gzip", async () => {
    await standIns.configure({ paths: { "py-box": pythonOnly } });
    await standIns.clear();
    const exec = dockerExec("py-box");
    const dir = await mkdtemp(fx.suite.dir, "python-");
    for (const [kind, bytes] of [
      ["random", RANDOM],
      ["text", TEXT],
    ] as const) {
      const fileId = await fx.seeded(bytes, `${kind}.bin`);
      const compress = kind === "text" ? "always" : "auto";
      const pushed = await fx.airlock.pushFile(exec, fileId, join(dir, `${kind}.bin`), {
        compress,
      });
      expect(pushed.transfer).toBe(kind === "text" ? "gzip" : "identity");
      expect(sha256(await readFile(join(dir, `${kind}.bin`)))).toBe(sha256(bytes));
      const record = await fx.airlock.collectFile(exec, fx.sessionId, join(dir, `${kind}.bin`), {
        compress,
      });
      expect(record.sha256).toBe(sha256(bytes));
    }
    const [probe] = await recorded();
    expect(probe?.argv.slice(2, 5)).toEqual(["py-box", "sh", "-c"]);
    // The push scripts hash with python3: sha256sum is not there.
    const pushes = (await recorded()).filter((call) => call.argv[6] === "airlock-push");
    expect(pushes.every((call) => call.argv[5]?.includes("hashlib.sha256"))).toBe(true);
  });

  it("refuses to move bytes into a sandbox that cannot check a SHA-256", async () => {
    const bare = await sandboxPath(join(fx.suite.dir, "bare-bin"), []);
    await standIns.configure({ paths: { bare } });
    const dir = await mkdtemp(fx.suite.dir, "bare-");
    const fileId = await fx.seeded(TEXT, "text.txt");
    const refused = await rejectionOf<AirlockError>(
      fx.airlock.pushFile(dockerExec("bare"), fileId, join(dir, "text.txt")),
    );
    expect(refused.code).toBe("sandbox_cannot_verify");
    expect(await readdir(dir)).toEqual([]);
    await standIns.configure({});
  });

  it("falls back to base64 in ≤ 64 KiB chunks for an exec API without stdin", async () => {
    await standIns.configure({});
    await standIns.clear();
    const dir = await mkdtemp(fx.suite.dir, "chunks-");
    const exec: ExecAdapter = { ...dockerExec("box"), stdin: false };
    const bytes = RANDOM.subarray(0, 300_000);
    const fileId = await fx.seeded(bytes, "part.bin");
    const pushed = await fx.airlock.pushFile(exec, fileId, join(dir, "part.bin"), {
      readonly: true,
    });
    expect(pushed.transfer).toBe("base64-chunks");
    expect(sha256(await readFile(join(dir, "part.bin")))).toBe(sha256(bytes));
    expect((await stat(join(dir, "part.bin"))).mode & 0o777).toBe(0o444);
    const chunks = (await standIns.calls()).filter((call) => call.argv[6] === "airlock-chunk");
    expect(chunks).toHaveLength(Math.ceil(bytes.byteLength / (48 * 1024)));
    for (const call of chunks) expect(call.argv[8]?.length).toBeLessThanOrEqual(64 * 1024);
    expect(await readdir(dir)).toEqual(["part.bin"]);
  });
});
