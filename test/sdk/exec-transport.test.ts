import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AirlockClient,
  AirlockError,
  collectToLocalFile,
  dockerExec,
  kubectlExec,
  pushLocalFile,
  sshExec,
  type ExecAdapter,
} from "../../sdk/src/node";
import { relaySuite } from "../support/relay-suite";
import { rejectionOf } from "../support/rejection";
import { startSshd, type TestSshd } from "./sshd";
import { installStandIns, sandboxPath, type StandInCall } from "./stand-in-cli";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const MiB = 1024 * 1024;

/** 3 MiB of random bytes (gzip does not pay) and of text (it does), each with a marker. */
const MARKER = "AIRLOCK-MARKER-7f3e9c";
const RANDOM = Buffer.concat([Buffer.from(MARKER), randomBytes(3 * MiB)]);
const TEXT = Buffer.from(
  Array.from(
    { length: 60_000 },
    (_, i) => `${MARKER} line ${i}: the quick brown fox ${i % 97} jumps\n`,
  ).join(""),
);

const suite = relaySuite({}, "airlock-exec-");
let airlock: AirlockClient;
let sessionId: string;

beforeAll(async () => {
  airlock = new AirlockClient({ url: suite.relay.url, adminToken: suite.relay.adminToken });
  ({ sessionId } = await airlock.createSession({ quotaBytes: 200 * MiB }));
});

/** Seeds `bytes` into the session; returns the file id. */
async function seeded(bytes: Uint8Array, name: string): Promise<string> {
  return (await airlock.seedInbox(sessionId, bytes, { name })).file.fileId;
}

async function sessionFileCount(): Promise<number> {
  return (await airlock.listFiles({ sessionId })).length;
}

/** Files in `dir` other than `keep`: temp files left behind would show here. */
async function leftovers(dir: string, keep: string[] = []): Promise<string[]> {
  return (await readdir(dir)).filter((name) => !keep.includes(name));
}

/** Push and collect round trips, byte-exact, through one adapter onto this machine's disk. */
function roundTrips(name: string, adapter: () => ExecAdapter, workDir: () => string) {
  describe(`round trips over ${name}`, () => {
    it.each([
      ["random", RANDOM, "identity", "auto"],
      ["text", TEXT, "gzip", "always"],
    ] as const)(
      "pushes and collects 3 MiB of %s byte-exact",
      async (kind, bytes, transfer, compress) => {
        const exec = adapter();
        const dir = await mkdtemp(workDir(), `push-${kind}-`);
        const fileId = await seeded(bytes, `${kind}.bin`);
        const target = join(dir, `${kind}.bin`);
        const pushed = await airlock.pushFile(exec, fileId, target, { compress });
        expect(pushed.transfer).toBe(transfer);
        expect(sha256(await readFile(target))).toBe(sha256(bytes));
        expect((await stat(target)).mode & 0o777).not.toBe(0o444);
        expect(await leftovers(dir, [`${kind}.bin`])).toEqual([]);

        const before = await sessionFileCount();
        const record = await airlock.collectFile(exec, sessionId, target, { compress });
        expect(record.sha256).toBe(sha256(bytes));
        expect(record.size).toBe(bytes.byteLength);
        expect(record.name).toBe(`${kind}.bin`);
        expect(record.sessionId).toBe(sessionId);
        const back = Buffer.from(await (await airlock.download(record.fileId)).arrayBuffer());
        expect(sha256(back)).toBe(sha256(bytes));
        expect(await sessionFileCount()).toBe(before + 1);
        // An ordinary file: it gets share links.
        const link = await suite.api(
          suite.relay.adminToken,
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
      const fileId = await seeded(Buffer.from('{"model":"x"}\n'), "config.json");
      await airlock.pushFile(exec, fileId, target, { readonly: true });
      expect((await stat(target)).mode & 0o777).toBe(0o444);

      const other = await seeded(Buffer.from("something else\n"), "other.txt");
      const refused = await rejectionOf<AirlockError>(airlock.pushFile(exec, other, target));
      expect(refused).toBeInstanceOf(AirlockError);
      expect(refused.code).toBe("target_exists");
      expect(refused.message).toContain("exists (not replaced)");
      expect(await readFile(target, "utf8")).toBe('{"model":"x"}\n');
      expect(await leftovers(dir, ["config.json"])).toEqual([]);

      await airlock.pushFile(exec, other, target, { overwrite: true });
      expect(await readFile(target, "utf8")).toBe("something else\n");
    });

    it("refuses to collect a file that is not there, storing nothing", async () => {
      const exec = adapter();
      const before = await sessionFileCount();
      const refused = await rejectionOf<AirlockError>(
        airlock.collectFile(exec, sessionId, join(workDir(), "no-such-file")),
      );
      expect(refused.code).toBe("sandbox_file_unreadable");
      expect(refused.message).toContain("not a regular file");
      expect(await sessionFileCount()).toBe(before);
    });
  });
}

async function mkdtemp(parent: string, prefix: string): Promise<string> {
  const dir = join(parent, `${prefix}${randomBytes(4).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

describe("the ssh adapter against a real sshd on 127.0.0.1", () => {
  let sshd: TestSshd;
  let ssh: ExecAdapter;
  beforeAll(async () => {
    sshd = await startSshd();
    ssh = sshExec({
      host: sshd.host,
      user: sshd.user,
      port: sshd.port,
      identityFile: sshd.identityFile,
      controlPath: sshd.controlPath,
      sshArgs: sshd.sshArgs,
    });
  });
  afterAll(async () => {
    await sshd?.stop();
  });

  roundTrips(
    "ssh",
    () => ssh,
    () => suite.dir,
  );

  it("quotes every argument for the remote shell", async () => {
    const dir = await mkdtemp(suite.dir, "quotes-");
    const name = `it's $(touch pwned) "quoted" ; a.txt`;
    const fileId = await seeded(Buffer.from("quoted\n"), "q.txt");
    await airlock.pushFile(ssh, fileId, join(dir, name));
    expect(await readdir(dir)).toEqual([name]);
    expect(await readFile(join(dir, name), "utf8")).toBe("quoted\n");
  });
});

describe("the docker and kubectl adapters against stand-in CLIs", () => {
  let standIns: Awaited<ReturnType<typeof installStandIns>>;
  let pythonOnly: string;
  const savedPath = process.env.PATH;
  beforeAll(async () => {
    const bin = join(suite.dir, "stand-in-bin");
    standIns = await installStandIns(bin);
    pythonOnly = await sandboxPath(join(suite.dir, "python-only-bin"), ["python3"]);
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
    "docker exec -i",
    () => dockerExec("box"),
    () => suite.dir,
  );
  roundTrips(
    "kubectl exec -i",
    () => kubectlExec({ pod: "pod-1", namespace: "agents", container: "main" }),
    () => suite.dir,
  );

  it("runs docker exec -i <container> sh -c …, the bytes on stdin only", async () => {
    await standIns.configure({});
    await standIns.clear();
    const dir = await mkdtemp(suite.dir, "argv-");
    const exec = dockerExec("box", { user: "agent" });
    const fileId = await seeded(TEXT, "text.txt");
    await airlock.pushFile(exec, fileId, join(dir, "text.txt"));
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
    const dir = await mkdtemp(suite.dir, "fd-");
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
    const dir = await mkdtemp(suite.dir, "kargv-");
    await writeFile(join(dir, "out.bin"), RANDOM);
    const exec = kubectlExec({ pod: "pod-1", namespace: "agents", container: "main" });
    const record = await airlock.collectFile(exec, sessionId, join(dir, "out.bin"));
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
        const dir = await mkdtemp(suite.dir, "flip-in-");
        const fileId = await seeded(bytes, `${kind}.bin`);
        const refused = await rejectionOf<AirlockError>(
          airlock.pushFile(dockerExec("box"), fileId, join(dir, `${kind}.bin`)),
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
      const dir = await mkdtemp(suite.dir, "flip-out-");
      await writeFile(join(dir, `${kind}.bin`), bytes);
      const before = await sessionFileCount();
      await standIns.configure({ flip: { stream: "stdout", at: 100_000 } });
      try {
        const refused = await rejectionOf<AirlockError>(
          airlock.collectFile(dockerExec("box"), sessionId, join(dir, `${kind}.bin`)),
        );
        expect(refused).toBeInstanceOf(AirlockError);
        expect(refused.code).toBe("transfer_mismatch");
        expect(refused.message).toContain("nothing was kept");
      } finally {
        await standIns.configure({});
      }
      expect(await sessionFileCount()).toBe(before);
    },
  );

  it("verifies with python3 in a sandbox without sha256sum, openssl, node or gzip", async () => {
    await standIns.configure({ paths: { "py-box": pythonOnly } });
    await standIns.clear();
    const exec = dockerExec("py-box");
    const dir = await mkdtemp(suite.dir, "python-");
    for (const [kind, bytes] of [
      ["random", RANDOM],
      ["text", TEXT],
    ] as const) {
      const fileId = await seeded(bytes, `${kind}.bin`);
      const compress = kind === "text" ? "always" : "auto";
      const pushed = await airlock.pushFile(exec, fileId, join(dir, `${kind}.bin`), { compress });
      expect(pushed.transfer).toBe(kind === "text" ? "gzip" : "identity");
      expect(sha256(await readFile(join(dir, `${kind}.bin`)))).toBe(sha256(bytes));
      const record = await airlock.collectFile(exec, sessionId, join(dir, `${kind}.bin`), {
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
    const bare = await sandboxPath(join(suite.dir, "bare-bin"), []);
    await standIns.configure({ paths: { bare } });
    const dir = await mkdtemp(suite.dir, "bare-");
    const fileId = await seeded(TEXT, "text.txt");
    const refused = await rejectionOf<AirlockError>(
      airlock.pushFile(dockerExec("bare"), fileId, join(dir, "text.txt")),
    );
    expect(refused.code).toBe("sandbox_cannot_verify");
    expect(await readdir(dir)).toEqual([]);
    await standIns.configure({});
  });

  it("falls back to base64 in ≤ 64 KiB chunks for an exec API without stdin", async () => {
    await standIns.configure({});
    await standIns.clear();
    const dir = await mkdtemp(suite.dir, "chunks-");
    const exec: ExecAdapter = { ...dockerExec("box"), stdin: false };
    const bytes = RANDOM.subarray(0, 300_000);
    const fileId = await seeded(bytes, "part.bin");
    const pushed = await airlock.pushFile(exec, fileId, join(dir, "part.bin"), { readonly: true });
    expect(pushed.transfer).toBe("base64-chunks");
    expect(sha256(await readFile(join(dir, "part.bin")))).toBe(sha256(bytes));
    expect((await stat(join(dir, "part.bin"))).mode & 0o777).toBe(0o444);
    const chunks = (await standIns.calls()).filter((call) => call.argv[6] === "airlock-chunk");
    expect(chunks).toHaveLength(Math.ceil(bytes.byteLength / (48 * 1024)));
    for (const call of chunks) expect(call.argv[8]?.length).toBeLessThanOrEqual(64 * 1024);
    expect(await readdir(dir)).toEqual(["part.bin"]);
  });
});

describe("POST /v1/sessions/:id/files (the operator's route for collected files)", () => {
  const post = (path: string, token: string, body: Uint8Array) =>
    fetch(`${suite.relay.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "text/plain" },
      body,
    });

  it("stores the bytes as a file of the session under a cleaned name", async () => {
    const bytes = Buffer.from("made in the sandbox\n");
    const answer = await post(
      `/v1/sessions/${sessionId}/files?name=${encodeURIComponent("../../etc/out.txt")}&sha256=${sha256(bytes)}`,
      suite.relay.adminToken,
      bytes,
    );
    expect(answer.status).toBe(201);
    const record = (await answer.json()) as { name: string; sha256: string; sessionId: string };
    expect(record).toMatchObject({ name: "out.txt", sha256: sha256(bytes), sessionId });
  });

  it("refuses bytes that are not the declared sha256, storing nothing", async () => {
    const before = await sessionFileCount();
    const answer = await post(
      `/v1/sessions/${sessionId}/files?name=x.txt&sha256=${"0".repeat(64)}`,
      suite.relay.adminToken,
      Buffer.from("not what was declared\n"),
    );
    expect(answer.status).toBe(422);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe(
      "content_mismatch",
    );
    expect(await sessionFileCount()).toBe(before);
  });

  it("is the operator's only: a session token gets 403, an unknown session 404", async () => {
    const { token } = await airlock.createSession();
    const bytes = Buffer.from("x");
    const asSession = await post(`/v1/sessions/${sessionId}/files?name=x`, token, bytes);
    expect(asSession.status).toBe(403);
    expect(((await asSession.json()) as { error: { code: string } }).error.code).toBe("forbidden");
    const unknown = await post("/v1/sessions/ses_nope/files?name=x", suite.relay.adminToken, bytes);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe(
      "session_not_found",
    );
  });
});
