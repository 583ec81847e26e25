import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sshExec, type ExecAdapter } from "../../sdk/src/node";
import { MiB, execFixture, mkdtemp, sha256 } from "./exec-fixture";
import { roundTrips } from "./exec-round-trips";
import { startSshd, type TestSshd } from "./sshd";

const fx = execFixture("airlock-exec-", 200 * MiB);

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
    fx,
    "ssh",
    () => ssh,
    () => fx.suite.dir,
  );

  it("quotes every argument for the remote shell", async () => {
    const dir = await mkdtemp(fx.suite.dir, "quotes-");
    const name = `it's $(touch pwned) "quoted" ; a.txt`;
    const fileId = await fx.seeded(Buffer.from("quoted\n"), "q.txt");
    await fx.airlock.pushFile(ssh, fileId, join(dir, name));
    expect(await readdir(dir)).toEqual([name]);
    expect(await readFile(join(dir, name), "utf8")).toBe("quoted\n");
  });
});

describe("POST /v1/sessions/:id/files (the operator's route for collected files)", () => {
  const post = (path: string, token: string, body: Uint8Array) =>
    fetch(`${fx.suite.relay.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "text/plain" },
      body,
    });

  it("stores the bytes as a file of the session under a cleaned name", async () => {
    const bytes = Buffer.from("made in the sandbox\n");
    const answer = await post(
      `/v1/sessions/${fx.sessionId}/files?name=${encodeURIComponent("../../etc/out.txt")}&sha256=${sha256(bytes)}`,
      fx.suite.relay.adminToken,
      bytes,
    );
    expect(answer.status).toBe(201);
    const record = (await answer.json()) as { name: string; sha256: string; sessionId: string };
    expect(record).toMatchObject({
      name: "out.txt",
      sha256: sha256(bytes),
      sessionId: fx.sessionId,
    });
  });

  it("refuses bytes that are not the declared sha256, storing nothing", async () => {
    const before = await fx.sessionFileCount();
    const answer = await post(
      `/v1/sessions/${fx.sessionId}/files?name=x.txt&sha256=${"0".repeat(64)}`,
      fx.suite.relay.adminToken,
      Buffer.from("not what was declared\n"),
    );
    expect(answer.status).toBe(422);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe(
      "content_mismatch",
    );
    expect(await fx.sessionFileCount()).toBe(before);
  });

  it("is the operator's only: a session token gets 403, an unknown session 404", async () => {
    const { token } = await fx.airlock.createSession();
    const bytes = Buffer.from("x");
    const asSession = await post(`/v1/sessions/${fx.sessionId}/files?name=x`, token, bytes);
    expect(asSession.status).toBe(403);
    expect(((await asSession.json()) as { error: { code: string } }).error.code).toBe("forbidden");
    const unknown = await post(
      "/v1/sessions/ses_nope/files?name=x",
      fx.suite.relay.adminToken,
      bytes,
    );
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe(
      "session_not_found",
    );
  });
});
