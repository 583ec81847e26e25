import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { apiCall, type ApiAnswer } from "../support/api-call";
import { startRelay, type RunningRelay } from "../support/relay";
import { relaySuite } from "../support/relay-suite";
import { identityDeclaration } from "../support/declarations";
import { s3Vars } from "../support/s3-vars";
import { putToLink, startLinkUpload } from "../support/upload-link";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";

/**
 * Uploads and upload links attacked: another session's upload id, content outside the
 * caller's scope, and a link's upload used after its lease lapsed.
 * Against `wrangler dev` on the local R2 and D1.
 */
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const base64 = (hex: string) => Buffer.from(hex, "hex").toString("base64");
/** Long enough that the requests of one upload fit in its window on a busy machine. */
const UPLOAD_URL_TTL_SECONDS = 10;

describe("uploads and upload links, attacked", () => {
  const suite = relaySuite(
    {
      vars: {
        UPLOAD_URL_TTL_SECONDS: String(UPLOAD_URL_TTL_SECONDS),
        LINK_UPLOAD_LEASE_SECONDS: String(UPLOAD_URL_TTL_SECONDS),
      },
    },
    "airlock-security-uploads-",
  );
  const { api } = suite;

  async function createRequest(token: string, body: object = {}): Promise<CreatedRequest> {
    const answer = await api(token, "POST", "/v1/requests", body);
    expect(answer.status).toBe(201);
    return answer.body as unknown as CreatedRequest;
  }

  const putLinkPart = (url: string, uploadId: string, bytes: Uint8Array) =>
    fetch(`${url}/uploads/${uploadId}/parts/1`, {
      method: "PUT",
      body: bytes,
      headers: {
        "content-length": String(bytes.byteLength),
        "x-amz-checksum-sha256": base64(sha256(bytes)),
      },
    });

  async function errorOf(response: Response) {
    return { status: response.status, ...((await response.json()) as { error: object }).error };
  }

  const declare = (token: string, bytes: Uint8Array, parts?: string[]) =>
    api(token, "POST", "/v1/uploads", {
      ...identityDeclaration(bytes),
      ...(parts ? { partSha256: parts } : {}),
    });

  async function putSigned(answer: ApiAnswer, bytes: Uint8Array): Promise<number> {
    const put = answer.body.put as { url: string; headers: Record<string, string> };
    const response = await fetch(put.url, { method: "PUT", headers: put.headers, body: bytes });
    await response.body?.cancel();
    return response.status;
  }

  it("a file put through a link does not tell whether another owner holds its content", async () => {
    const secret = randomBytes(50_000);
    const victim = await suite.relay.mintSession({ owner: "victim" });
    const held = await declare(victim.token, secret);
    expect(await putSigned(held, secret)).toBe(200);
    const completed = await api(
      victim.token,
      "POST",
      `/v1/uploads/${held.body.uploadId as string}/complete`,
    );
    expect(completed.body.status).toBe("verified");

    const attacker = await suite.relay.mintSession({ owner: "attacker" });
    const guess = await createRequest(attacker.token);
    const control = await createRequest(attacker.token);
    expect((await putToLink(guess.url, secret)).status).toBe(201);
    expect((await putToLink(control.url, randomBytes(50_000))).status).toBe(201);

    const inbox = await api(attacker.token, "GET", "/v1/inbox");
    const items = inbox.body.items as { sha256: string; file: { deduped: boolean } }[];
    expect(items[0]?.sha256).toBe(sha256(secret));
    expect(items.map((item) => item.file.deduped)).toEqual([false, false]);
    const files = await api(attacker.token, "GET", "/v1/files");
    const records = files.body.files as { deduped: boolean }[];
    expect(records.map((record) => record.deduped)).toEqual([false, false]);
  });

  it("another session of the same owner cannot resume or complete an upload it did not declare", async () => {
    const mine = await suite.relay.mintSession({ owner: "shared" });
    const theirs = await suite.relay.mintSession({ owner: "shared" });
    const single = randomBytes(3000);
    const multi = randomBytes(4000);
    const singleAnswer = await declare(mine.token, single);
    const multiAnswer = await declare(mine.token, multi, [sha256(multi)]);
    expect(multiAnswer.body.status).toBe("multipart");
    expect(await putSigned(singleAnswer, single)).toBe(200);
    const notFound = { code: "upload_not_found", message: "no such upload" };
    for (const id of [singleAnswer.body.uploadId, multiAnswer.body.uploadId] as string[]) {
      const state = await api(theirs.token, "GET", `/v1/uploads/${id}`);
      expect(state).toEqual({ status: 404, body: { error: notFound } });
      const complete = await api(theirs.token, "POST", `/v1/uploads/${id}/complete`);
      expect(complete).toEqual({ status: 404, body: { error: notFound } });
    }
    // Nothing of it became theirs; the owner completes it as if nobody had tried.
    expect((await api(theirs.token, "GET", "/v1/files")).body.files).toEqual([]);
    const done = await api(
      mine.token,
      "POST",
      `/v1/uploads/${singleAnswer.body.uploadId as string}/complete`,
    );
    expect(done.status).toBe(201);
    expect(done.body).toMatchObject({ sha256: sha256(single), status: "verified" });
  });

  it("lets no race of declares, link PUTs or link starts store more than the quota", async () => {
    const quotaBytes = 10_000;
    const refused = { status: 413, code: "quota_exceeded" };

    const declarer = await suite.relay.mintSession({ quotaBytes });
    const declares = await Promise.all(
      [1, 2, 3, 4, 5].map(() => declare(declarer.token, randomBytes(4000))),
    );
    expect(declares.map((answer) => answer.status).sort()).toEqual([201, 201, 413, 413, 413]);

    const linked = await suite.relay.mintSession({ quotaBytes });
    const links = await Promise.all([1, 2, 3, 4].map(() => createRequest(linked.token)));
    const chunked = (bytes: Uint8Array) =>
      fetch(links[3]!.url, {
        method: "PUT",
        body: new Blob([bytes]).stream(),
        duplex: "half",
      } as RequestInit);
    const puts = await Promise.all([
      putToLink(links[0]!.url, randomBytes(6000)),
      putToLink(links[1]!.url, randomBytes(6000)),
      startLinkUpload(links[2]!.url, randomBytes(6000)),
      chunked(randomBytes(6000)),
    ]);
    const statuses = puts.map((response) => response.status);
    // The bytes that arrive first win; a start only promised is refused at its completion if
    // a PUT's file filled the quota meanwhile (never stored past it either way).
    expect(statuses.filter((status) => status === 201).length).toBeGreaterThanOrEqual(1);
    expect([statuses[0], statuses[1], statuses[3]].filter((s) => s === 201).length).toBeLessThan(2);
    for (const response of puts.filter((r) => r.status !== 201)) {
      expect(await errorOf(response)).toMatchObject(refused);
    }
    const files = await api(linked.token, "GET", "/v1/files");
    const stored = (files.body.files as { size: number }[]).reduce((sum, f) => sum + f.size, 0);
    expect(stored).toBeLessThanOrEqual(quotaBytes);
  });

  it("takes no part of a link's upload once its lease lapsed and the room went", async () => {
    const quotaBytes = 10_000;
    const { token } = await suite.relay.mintSession({ quotaBytes });
    const request = await createRequest(token);
    const bytes = randomBytes(quotaBytes);
    const started = (await (await startLinkUpload(request.url, bytes)).json()) as {
      uploadId: string;
    };
    // A stranger's promise never holds the sandbox's room: its own send fits at once.
    const other = randomBytes(quotaBytes);
    const declared = await declare(token, other);
    expect(declared.body.status).toBe("upload");
    await new Promise((resolve) => setTimeout(resolve, (UPLOAD_URL_TTL_SECONDS + 1) * 1000));

    // Lapsed, its room goes to the sandbox's next send (the first one lapsed unsent too)…
    const next = randomBytes(quotaBytes);
    const nextAnswer = await declare(token, next);
    expect(nextAnswer.body.status).toBe("upload");
    expect(await putSigned(nextAnswer, next)).toBe(200);
    const uploadId = nextAnswer.body.uploadId as string;
    const stored = await api(token, "POST", `/v1/uploads/${uploadId}/complete`);
    expect(stored.status).toBe(201);
    // …reading its state does not renew it, and its parts, sent now, are refused.
    const read = await fetch(`${request.url}/uploads/${started.uploadId}`);
    const state = (await read.json()) as { status: string; leaseExpiresAt: string };
    expect(state.status).toBe("uploading");
    expect(Date.parse(state.leaseExpiresAt)).toBeLessThanOrEqual(Date.now());
    const late = await putLinkPart(request.url, started.uploadId, bytes);
    expect(await errorOf(late)).toEqual({
      status: 413,
      code: "quota_exceeded",
      message:
        "this upload stopped sending and its room in the session's quota went to other files; " +
        "pick the file again",
    });

    // Once the room is there again (the sandbox deleted its file), a part renews it.
    const fileId = (stored.body as { fileId: string }).fileId;
    expect((await api(token, "DELETE", `/v1/files/${fileId}`)).status).toBe(200);
    expect((await putLinkPart(request.url, started.uploadId, bytes)).status).toBe(204);
    const complete = await fetch(`${request.url}/uploads/${started.uploadId}/complete`, {
      method: "POST",
    });
    expect(await complete.json()).toMatchObject({ status: "received", sha256: sha256(bytes) });
    const inbox = await api(token, "GET", "/v1/inbox");
    const items = inbox.body.items as { file: { fileId: string } }[];
    expect(items).toHaveLength(1);
    const content = await fetch(`${suite.relay.url}/v1/files/${items[0]!.file.fileId}/content`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(sha256(new Uint8Array(await content.arrayBuffer()))).toBe(sha256(bytes));
  });
});

/**
 * On s3 a download answers 307 to a presigned URL of the object the file is stored on: that
 * object must not tell whether another scope stored the content first.
 */
describe("stored copies on s3, attacked (wrangler dev, strict S3)", () => {
  let s3: StrictS3;
  let relay: RunningRelay;

  beforeAll(async () => {
    s3 = await startStrictS3();
    relay = await startRelay({ storage: "s3", vars: s3Vars(s3) });
  }, 180_000);
  afterAll(async () => {
    await relay?.stop();
    await s3?.stop();
  });

  async function sendWhole(token: string, bytes: Uint8Array) {
    const declared = await apiCall(
      relay.url,
      token,
      "POST",
      "/v1/uploads",
      identityDeclaration(bytes),
    );
    const put = declared.body.put as { url: string; headers: Record<string, string> };
    const stored = await fetch(put.url, { method: "PUT", headers: put.headers, body: bytes });
    expect(stored.status).toBe(200);
    const uploadId = declared.body.uploadId as string;
    const file = await apiCall(relay.url, token, "POST", `/v1/uploads/${uploadId}/complete`);
    expect(file.status).toBe(201);
    return { uploadId, fileId: file.body.fileId as string };
  }

  /** The object key a download of the file is redirected to. */
  async function redirectedKey(token: string, fileId: string): Promise<string> {
    const response = await fetch(`${relay.url}/v1/files/${fileId}/content`, {
      redirect: "manual",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(307);
    return new URL(response.headers.get("location") ?? "").pathname;
  }

  // The verify queue moves a verified file onto the one stored copy of its content: on s3 that
  // copy is on the key its bytes alone name, never another scope's upload key, which a 307
  // would show.
  it("a download's store URL does not name another scope's upload of the same content", async () => {
    const content = randomBytes(20_000);
    const victim = await relay.mintSession({ owner: "victim" });
    const first = await sendWhole(victim.token, content);
    const attacker = await relay.mintSession({ owner: "attacker" });
    const mine = await sendWhole(attacker.token, content);

    // The verify queue settles the stored copy a moment after the answer: watch it do so,
    // until both files are on the one copy, named by the content alone.
    const contentKey = `/${s3.bucket}/blobs/${sha256(content).slice(0, 2)}/${sha256(content)}`;
    const seen: string[] = [];
    const deadline = Date.now() + 60_000;
    for (;;) {
      const keys = await Promise.all([
        redirectedKey(attacker.token, mine.fileId),
        redirectedKey(victim.token, first.fileId),
      ]);
      seen.push(keys[0]);
      if (keys.every((key) => key === contentKey) || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    for (const key of seen) expect(key).not.toContain(first.uploadId);
    expect(seen.at(-1)).toBe(contentKey);
    expect(await redirectedKey(victim.token, first.fileId)).toBe(contentKey);
  }, 120_000);

  it("a link PUT's stored copy does not name another scope's upload either", async () => {
    const content = randomBytes(20_000);
    const victim = await relay.mintSession({ owner: "victim" });
    const first = await sendWhole(victim.token, content);
    const attacker = await relay.mintSession({ owner: "attacker" });
    const request = await apiCall(relay.url, attacker.token, "POST", "/v1/requests", {});
    const put = await fetch(request.body.url as string, {
      method: "PUT",
      body: content,
      headers: { "content-length": String(content.byteLength) },
    });
    expect(put.status).toBe(201);
    const files = await apiCall(relay.url, attacker.token, "GET", "/v1/files");
    const [file] = files.body.files as { fileId: string }[];
    expect(await redirectedKey(attacker.token, file!.fileId)).not.toContain(first.uploadId);
  });
});
