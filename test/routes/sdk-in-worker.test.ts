// The SDK's core (no Node built-ins) inside the Workers runtime, calling the relay in-process.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AirlockClient, AirlockError, type FetchLike } from "../../sdk/src/index";
import { logText, randomBytes, sha256Hex } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { ADMIN_TOKEN, ORIGIN, RelayClient } from "../support/relay-client";
import { upload } from "../support/send";
import { rejectionOf } from "../support/rejection";

const fakes = new PlatformFakes();
const relay = new RelayClient(fakes.env(env));
/** Routes the SDK's requests to `app.fetch`, as a Worker with a service binding would. */
const inProcess: FetchLike = (url, init) => relay.fetch(url, init);
const airlock = new AirlockClient({ url: ORIGIN, adminToken: ADMIN_TOKEN, fetch: inProcess });

describe("the SDK core in the Workers runtime", () => {
  it("creates a session, lists and downloads its files, revokes it", async () => {
    const { sessionId, token, destinations } = await airlock.createSession({ ttlSeconds: 600 });
    expect(destinations).toEqual([]);
    const bytes = randomBytes(100_000);
    const text = logText(2000); // stored gzipped: downloads are still the original bytes
    const sent = [
      await upload(relay, token, bytes, "a.bin"),
      await upload(relay, token, text, "b.log", "gzip"),
    ];

    const files = await airlock.listFiles({ sessionId });
    expect(files.map((f) => f.fileId).sort()).toEqual(sent.map((f) => f.fileId).sort());
    const sandbox = airlock.asSession(token);
    expect((await sandbox.listFiles()).map((f) => f.fileId).sort()).toEqual(
      sent.map((f) => f.fileId).sort(),
    );
    for (const [file, original] of [
      [sent[0]!, bytes],
      [sent[1]!, text],
    ] as const) {
      expect(await airlock.getFile(file.fileId)).toMatchObject({ sha256: file.sha256 });
      const response = await airlock.download(file.fileId);
      expect(await sha256Hex(new Uint8Array(await response.arrayBuffer()))).toBe(
        await sha256Hex(original),
      );
    }

    await airlock.revokeSession(sessionId);
    const refused = await rejectionOf<AirlockError>(sandbox.listFiles());
    expect(refused).toBeInstanceOf(AirlockError);
    expect(refused).toMatchObject({ status: 401, code: "session_revoked" });
  });

  it("seeds an inbox from bytes and from a sized stream; the session reads and acks it", async () => {
    const { sessionId, token } = await airlock.createSession();
    const bytes = randomBytes(70_000);
    const streamed = randomBytes(300_000);
    const chunks = [streamed.subarray(0, 100_000), streamed.subarray(100_000)];
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const chunk = chunks.shift();
        if (chunk) controller.enqueue(chunk);
        else controller.close();
      },
    });
    await airlock.seedInbox(sessionId, bytes, { name: "bytes.bin" });
    await airlock.seedInbox(sessionId, stream, {
      name: "stream.csv",
      size: streamed.byteLength,
      contentType: "text/csv",
    });
    const sandbox = airlock.asSession(token);
    const items = await sandbox.inbox();
    expect(items).toMatchObject([
      { name: "bytes.bin", source: "operator", sha256: await sha256Hex(bytes) },
      {
        name: "stream.csv",
        source: "operator",
        size: streamed.byteLength,
        sha256: await sha256Hex(streamed),
        contentType: "text/csv",
      },
    ]);
    for (const item of items) await sandbox.ack(item.itemId);
    expect(await sandbox.inbox()).toEqual([]);
  });

  it("delivers through the session's credential and reads the delivery records", async () => {
    const chat = uniqueChatId();
    const { token } = await airlock.createSession({ destinations: [`telegram:${chat}`] });
    const file = await upload(relay, token, randomBytes(5000), "report.bin");
    const sandbox = airlock.asSession(token);
    expect(
      await rejectionOf<AirlockError>(
        sandbox.deliver(file.fileId, { to: `telegram:${uniqueChatId()}` }),
      ),
    ).toMatchObject({ status: 403, code: "destination_not_allowed" });
    const delivery = await sandbox.deliver(file.fileId, {
      to: `telegram:${chat}`,
      caption: "Your report",
      idempotencyKey: `sdk-${chat}`,
    });
    expect(delivery).toMatchObject({
      fileId: file.fileId,
      to: `telegram:${chat}`,
      mode: "native",
      method: "sendDocument",
      status: "delivered",
    });
    const again = await sandbox.deliver(file.fileId, {
      to: `telegram:${chat}`,
      idempotencyKey: `sdk-${chat}`,
    });
    expect(again).toEqual(delivery);
    expect(await airlock.listDeliveries(file.fileId)).toEqual([delivery]);
    expect(await sandbox.listDeliveries(file.fileId)).toEqual([delivery]);
  });
});
