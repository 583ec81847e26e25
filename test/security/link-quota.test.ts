import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { AirlockSession } from "../../sdk/src/index";
import { apiCall } from "../support/api-call";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { putToLink, startLinkUpload } from "../support/upload-link";
import { failureLine, prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { runDriver, shimDrivers } from "../shim/shims";
import { shimScratchDir } from "../shim/scratch-dir";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";
import {
  endlessPut,
  errorOf,
  type EndlessOutcome,
  LEASE_SECONDS,
  loggedLine,
  MiB,
  putPart,
  sha256,
} from "./link-quota-support";

// Issue 24 §2, run the way each side runs it: the link holder with nothing but the link, the
// sandbox with nothing but its token and the shims. A link's limit is the smaller of its
// maxBytes and what the session's quota has left; a stranger's promised bytes never make the
// sandbox's own sends fail; a link upload that stops sending lets its room go; the sandbox can
// take a link back. Against `wrangler dev` on both backends.

const scratch = shimScratchDir("airlock-link-quota-");

describe.each(["r2", "s3"] as const)("upload links and the session's quota on %s", (storage) => {
  let relay: RunningRelay;
  let s3: StrictS3 | undefined;

  beforeAll(async () => {
    prepareShim();
    if (storage === "s3") s3 = await startStrictS3();
    relay = await startRelay({
      storage,
      vars: { LINK_UPLOAD_LEASE_SECONDS: String(LEASE_SECONDS), ...(s3 ? s3Vars(s3) : {}) },
    });
  });
  afterAll(async () => {
    await relay?.stop();
    await s3?.stop();
  });

  const api = (token: string, method: string, path: string, json?: unknown) =>
    apiCall(relay.url, token, method, path, json);

  async function createRequest(token: string, body: object = {}): Promise<CreatedRequest> {
    const answer = await api(token, "POST", "/v1/requests", body);
    expect(answer.status).toBe(201);
    return answer.body as unknown as CreatedRequest;
  }

  /** Sizes of the session's live files, as the sandbox lists them. */
  async function fileSizes(token: string): Promise<number[]> {
    const listed = await api(token, "GET", "/v1/files");
    return (listed.body.files as { size: number }[]).map((file) => file.size);
  }

  /** On s3: nothing of a refused body is left in the bucket, staged or in parts. */
  async function nothingStaged(): Promise<void> {
    if (!s3) return;
    expect(await s3.listKeys("staging/")).toEqual([]);
    expect(s3.multipartUploads().filter((u) => u.key.startsWith("staging/"))).toEqual([]);
  }

  /** The sandbox sends `bytes` with the Node shim; returns the shim's run. */
  async function sandboxSends(token: string, bytes: Uint8Array, name: string) {
    const path = join(scratch(), `${Date.now()}-${name}`);
    await writeFile(path, bytes);
    return runShim(["send", path, "--json"], { env: relayEnv(relay.url, token) });
  }

  it("cuts a chunked PUT at what the quota has left, keeping nothing", async () => {
    const { token } = await relay.mintSession({ quotaBytes: MiB });
    const link = await createRequest(token);
    expect(link.maxBytes).toBeGreaterThan(MiB); // The link's own limit is the relay's.

    // The body never ends: the relay stops reading it once it ran past what the quota has
    // left, and answers 413 (which the client reads unless the cut connection lost it).
    const put = endlessPut(link.url);
    const cut = await loggedLine(relay, "upload_link_body_cut", link.requestId);
    // The answer, if the client gets one, comes once the relay cut the body; give it a moment.
    const outcome = await Promise.race([
      put.outcome,
      new Promise<EndlessOutcome>((resolve) =>
        setTimeout(() => resolve({ cut: "no answer yet" }), 2000),
      ),
    ]);
    put.stop();
    if ("answer" in outcome) {
      expect({ status: outcome.answer.status, ...outcome.answer.body.error }).toEqual({
        status: 413,
        code: "quota_exceeded",
        message: `the session that asked for this file has ${MiB} bytes of its quota left; nothing was kept`,
      });
    }
    // Under wrangler dev the first request after a connection cut mid-body stalls (seen with
    // /healthz too; the next one answers at once): one throwaway request takes that stall.
    await fetch(`${relay.url}/healthz`, { signal: AbortSignal.timeout(10_000) }).catch(() => {});
    const [, limit, received] = /"limit":(\d+),"received":(\d+)/.exec(cut) ?? [];
    const logged = { limit: Number(limit), received: Number(received) };
    expect(logged.limit).toBe(MiB);
    expect(logged.received).toBeGreaterThan(MiB);
    expect(logged.received).toBeLessThanOrEqual(MiB + 64 * 1024);
    expect(await fileSizes(token)).toEqual([]);
    await nothingStaged();

    // Nothing of it counts: the sandbox's own send takes the whole quota.
    const whole = randomBytes(MiB);
    const sent = await sandboxSends(token, whole, "whole.bin");
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    expect(await fileSizes(token)).toEqual([MiB]);
  });

  it("never fails the sandbox's send for a stranger's promise, which lapses unless bytes arrive", async () => {
    const quotaBytes = MiB;
    const { token } = await relay.mintSession({ quotaBytes });
    const [first, second] = [await createRequest(token), await createRequest(token)];

    // A stranger reserves the whole quota and sends nothing.
    const promised = randomBytes(quotaBytes);
    const started = await startLinkUpload(first.url, promised);
    expect(started.status).toBe(201);
    const { uploadId, leaseExpiresAt } = (await started.json()) as {
      uploadId: string;
      leaseExpiresAt: string;
    };

    // The sandbox's own send goes through all the same.
    const own = randomBytes(1000);
    const sent = await sandboxSends(token, own, "own.bin");
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ size: 1000, sha256: sha256(own) });

    // Another link competes with the promise until it lapses; reading its state (as the holder
    // would, to keep it alive) never renews it.
    const rest = randomBytes(quotaBytes - 1000);
    const refused = await startLinkUpload(second.url, rest);
    expect(await errorOf(refused)).toMatchObject({ status: 413, code: "quota_exceeded" });
    let taken: Response | undefined;
    for (let attempt = 0; attempt < 120 && !taken; attempt++) {
      const state = await fetch(`${first.url}/uploads/${uploadId}`);
      expect(await state.json()).toMatchObject({ status: "uploading", leaseExpiresAt });
      const retry = await startLinkUpload(second.url, rest);
      if (retry.status === 201) taken = retry;
      else await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(taken?.status).toBe(201);

    // The lapsed promise cannot come back: its room went to bytes that are arriving.
    const late = await putPart(first.url, uploadId, promised);
    expect(await errorOf(late)).toMatchObject({ status: 413, code: "quota_exceeded" });
    const { uploadId: secondId } = (await taken!.json()) as { uploadId: string };
    expect((await putPart(second.url, secondId, rest)).status).toBe(204);
    const done = await fetch(`${second.url}/uploads/${secondId}/complete`, { method: "POST" });
    expect(await done.json()).toMatchObject({ status: "received", sha256: sha256(rest) });
    expect((await fileSizes(token)).sort((a, b) => a - b)).toEqual([1000, quotaBytes - 1000]);
  });

  it("refuses a link upload's completion once the sandbox filled the quota, keeping nothing", async () => {
    const { token } = await relay.mintSession({ quotaBytes: 100_000 });
    const link = await createRequest(token);
    const theirs = randomBytes(60_000);
    const { uploadId } = (await (await startLinkUpload(link.url, theirs)).json()) as {
      uploadId: string;
    };
    expect((await putPart(link.url, uploadId, theirs)).status).toBe(204);

    const ours = randomBytes(60_000);
    const sent = await sandboxSends(token, ours, "ours.bin");
    expect(sent.code, sent.stderr).toBe(0);

    const done = await fetch(`${link.url}/uploads/${uploadId}/complete`, { method: "POST" });
    expect(await errorOf(done)).toEqual({
      status: 413,
      code: "quota_exceeded",
      message:
        "the session that asked for this file has no room left for its 60000 bytes; nothing was kept",
    });
    expect(await fileSizes(token)).toEqual([60_000]);
    expect((await api(token, "GET", "/v1/inbox")).body.items).toEqual([]);
    if (s3) expect(await s3.listKeys(`uploads/${sha256(theirs)}`)).toEqual([]);
  });

  it("lets host code cancel a link for the session through the SDK", async () => {
    const quotaBytes = 100_000;
    const { token } = await relay.mintSession({ quotaBytes });
    const link = await createRequest(token);
    const started = await startLinkUpload(link.url, randomBytes(quotaBytes));
    expect(started.status).toBe(201);
    const session = new AirlockSession({ url: relay.url, token });
    expect(await session.cancelUploadRequest(link.requestId)).toMatchObject({
      requestId: link.requestId,
      status: "cancelled",
    });
    expect(await session.cancelUploadRequest(link.requestId)).toMatchObject({
      status: "cancelled",
    });
    const other = await createRequest(token);
    expect((await startLinkUpload(other.url, randomBytes(quotaBytes))).status).toBe(201);
  });

  it.each(["node", "python"] as const)(
    "lets the sandbox cancel a link with the %s shim",
    async (name) => {
      const driver = (await shimDrivers(scratch())).find((d) => d.name === name)!;
      const shim = (args: string[], env: Record<string, string>) =>
        runDriver(driver, args, { env, cwd: scratch(), home: scratch() });
      const quotaBytes = 200_000;
      const { token } = await relay.mintSession({ quotaBytes });
      const env = relayEnv(relay.url, token);
      const link = await createRequest(token);
      const promised = randomBytes(quotaBytes);
      const { uploadId } = (await (await startLinkUpload(link.url, promised)).json()) as {
        uploadId: string;
      };

      const cancelled = await shim(["request", "--cancel", link.requestId], env);
      expect(cancelled.stderr).toBe("");
      expect(cancelled.code).toBe(0);
      expect(cancelled.stdout).toBe(`cancelled ${link.requestId}\n`);
      const state = await api(token, "GET", `/v1/requests/${link.requestId}`);
      expect(state.body).toMatchObject({ requestId: link.requestId, status: "cancelled" });

      // The holder's link and upload are dead; nothing of the upload stays.
      const gone = { status: 410, code: "link_expired" };
      const message = "this upload link no longer works: it was cancelled";
      expect(await errorOf(await putPart(link.url, uploadId, promised))).toEqual({
        ...gone,
        message,
      });
      expect(await errorOf(await putToLink(link.url, randomBytes(10)))).toEqual({
        ...gone,
        message,
      });
      if (s3) {
        expect(s3.multipartUploads().filter((u) => u.key.includes(sha256(promised)))).toEqual([]);
      }
      // Its room is free at once: another link takes the whole quota.
      const other = await createRequest(token);
      expect((await startLinkUpload(other.url, randomBytes(quotaBytes))).status).toBe(201);

      const unknown = await shim(["request", "--cancel", "req_nosuchrequest"], env);
      expect(unknown.code).toBe(1);
      expect(failureLine(unknown)).toMatch(/no such upload request/);
    },
  );
});
