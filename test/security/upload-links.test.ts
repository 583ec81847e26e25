import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";
import { putToLink, startLinkUpload } from "../support/upload-link";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const base64 = (hex: string) => Buffer.from(hex, "hex").toString("base64");

/**
 * What a stranger holding an upload link can do: upload one file, within maxBytes, to the
 * session that asked — and nothing else. Against the relay as it runs (`wrangler dev`).
 */
describe("upload links under attack", () => {
  let relay: RunningRelay;

  beforeAll(async () => {
    relay = sharedRelay();
  });
  afterAll(async () => {
    await relay?.stop();
  });

  async function session() {
    return relay.mintSession();
  }

  async function createRequest(token: string, body: object = {}): Promise<CreatedRequest> {
    const response = await fetch(`${relay.url}/v1/requests`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(201);
    return (await response.json()) as CreatedRequest;
  }

  async function api(token: string, path: string, init: RequestInit = {}) {
    return fetch(`${relay.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
    });
  }

  async function inboxCount(token: string): Promise<number> {
    const response = await api(token, "/v1/inbox");
    return ((await response.json()) as { items: unknown[] }).items.length;
  }

  async function errorOf(response: Response) {
    return { status: response.status, ...((await response.json()) as { error: object }).error };
  }

  it("takes exactly one file when two uploads race for the same link", async () => {
    const { token } = await session();
    const created = await createRequest(token);
    const bodies = [randomBytes(400_000), randomBytes(400_000), randomBytes(400_000)];
    const answers = await Promise.all(bodies.map((body) => putToLink(created.url, body)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 410, 410]);
    expect(await inboxCount(token)).toBe(1);
    const files = (await (await api(token, "/v1/files")).json()) as { files: unknown[] };
    expect(files.files).toHaveLength(1);
  });

  it("grants nothing but the upload: no API access, no other link's upload", async () => {
    const { token, sessionId } = await session();
    const created = await createRequest(token);
    const linkToken = new URL(created.url).pathname.split("/")[2]!;
    for (const path of ["/v1/files", "/v1/inbox", `/v1/requests/${created.requestId}`]) {
      const response = await api(linkToken, path);
      expect(response.status).toBe(401);
    }

    // An upload under way through one link cannot be driven through another.
    const other = await createRequest(token);
    const bytes = randomBytes(1000);
    const started = (await (await startLinkUpload(other.url, bytes)).json()) as {
      uploadId: string;
    };
    const foreign = await fetch(`${created.url}/uploads/${started.uploadId}`);
    expect(await errorOf(foreign)).toEqual({
      status: 404,
      code: "upload_not_found",
      message: "this upload no longer holds the link; start again",
    });
    const foreignPart = await fetch(`${created.url}/uploads/${started.uploadId}/parts/1`, {
      method: "PUT",
      body: bytes,
      headers: { "x-amz-checksum-sha256": base64(sha256(bytes)) },
    });
    expect(foreignPart.status).toBe(404);

    // The page tells the person what is asked for, nothing about the session.
    const page = await (await fetch(created.url)).text();
    expect(page).not.toContain(created.requestId);
    expect(page).not.toContain("ses_");
    expect(page).not.toContain(sessionId);
  });

  it("keeps a request private to the session that made it", async () => {
    const mine = await session();
    const theirs = await session();
    const created = await createRequest(mine.token);
    const peek = await api(theirs.token, `/v1/requests/${created.requestId}`);
    const missing = await api(theirs.token, "/v1/requests/req_AAAAAAAAAAAAAAAAAAAAAA");
    expect(await errorOf(peek)).toEqual({
      status: 404,
      code: "not_found",
      message: "no such upload request",
    });
    expect(await errorOf(missing)).toEqual({
      status: 404,
      code: "not_found",
      message: "no such upload request",
    });
    // What a stranger sends lands in the asking session only.
    expect((await putToLink(created.url, randomBytes(10))).status).toBe(201);
    expect(await inboxCount(mine.token)).toBe(1);
    expect(await inboxCount(theirs.token)).toBe(0);
  });

  it("stops a revoked session's links, mid-upload included", async () => {
    const { token, sessionId } = await session();
    const fresh = await createRequest(token);
    const underway = await createRequest(token);
    const bytes = randomBytes(2000);
    const started = (await (await startLinkUpload(underway.url, bytes)).json()) as {
      uploadId: string;
    };
    const revoke = await fetch(`${relay.url}/v1/sessions/${sessionId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${relay.adminToken}` },
    });
    expect(revoke.ok).toBe(true);

    const page = await fetch(fresh.url);
    expect(page.status).toBe(410);
    expect(await page.text()).toContain("This link has expired");
    const ended = {
      status: 410,
      code: "link_expired",
      message: "this upload link no longer works: the session that asked for the file has ended",
    };
    expect(await errorOf(await putToLink(fresh.url, bytes))).toEqual(ended);
    const part = await fetch(`${underway.url}/uploads/${started.uploadId}/parts/1`, {
      method: "PUT",
      body: bytes,
      headers: { "x-amz-checksum-sha256": base64(sha256(bytes)) },
    });
    expect(await errorOf(part)).toEqual(ended);
    const complete = await fetch(`${underway.url}/uploads/${started.uploadId}/complete`, {
      method: "POST",
    });
    expect(await errorOf(complete)).toEqual(ended);
  });

  it("answers malformed and guessed tokens with 404, never an error or a hint", async () => {
    for (const bad of ["x", "%00", "A".repeat(43), "A".repeat(44), "..%2F..%2Fv1%2Ffiles"]) {
      const page = await fetch(`${relay.url}/u/${bad}`);
      expect(page.status).toBe(404);
      const upload = await putToLink(`${relay.url}/u/${bad}`, randomBytes(10));
      expect(await errorOf(upload)).toEqual({
        status: 404,
        code: "not_found",
        message: "no such upload link",
      });
    }
  });

  it("always moves the bytes: a link does not reveal what the session already holds", async () => {
    const { token } = await session();
    const bytes = randomBytes(5000);
    const first = await createRequest(token);
    expect((await putToLink(first.url, bytes)).status).toBe(201);
    // The same content again through a new link: no dedup answer, every part to send.
    const second = await createRequest(token);
    const answer = (await (await startLinkUpload(second.url, bytes)).json()) as {
      status: string;
      missing: number[];
    };
    expect(answer).toMatchObject({ status: "uploading", missing: [1] });
  });
});
