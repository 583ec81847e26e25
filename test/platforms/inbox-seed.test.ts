import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { blobKey } from "../../src/storage";
import { randomBytes, sha256Hex } from "../support/bytes";
import { ADMIN_TOKEN, errorOf } from "../support/relay-client";
import { client, contentOf, inboxOf } from "./inbox-harness";

/** The operator seeding a session's inbox, within the session's quota. */
describe("POST /v1/sessions/:id/inbox", () => {
  it("seeds a file the sandbox then finds in its inbox", async () => {
    const { sessionId, token } = await client.mintSession();
    const bytes = randomBytes(12_000);
    const seeded = await client.call(
      "POST",
      `/v1/sessions/${sessionId}/inbox?name=${encodeURIComponent("input data.csv")}`,
      {
        token: ADMIN_TOKEN,
        body: bytes,
        headers: { "content-type": "text/csv", "content-length": String(bytes.byteLength) },
      },
    );
    expect(seeded.status).toBe(201);
    const [item] = await inboxOf(token);
    expect(item).toMatchObject({ name: "input data.csv", source: "operator", size: 12_000 });
    expect(await contentOf(token, item!)).toBe(await sha256Hex(bytes));
  });

  it("refuses a sandbox token and another session's ack; cleans a bad name", async () => {
    const alice = await client.mintSession();
    const bob = await client.mintSession();
    const body = new Uint8Array(3);
    expect(
      (
        await client.call("POST", `/v1/sessions/${alice.sessionId}/inbox?name=a`, {
          token: alice.token,
          body,
        })
      ).status,
    ).toBe(403);
    const cleaned = await client.call(
      "POST",
      `/v1/sessions/${alice.sessionId}/inbox?name=${encodeURIComponent("../../etc/\u202Epasswd")}`,
      { token: ADMIN_TOKEN, body, headers: { "content-length": "3" } },
    );
    expect(cleaned.status).toBe(201);
    expect(((await cleaned.json()) as { name: string }).name).toBe("passwd");
    const dots = await client.call("POST", `/v1/sessions/${alice.sessionId}/inbox?name=..`, {
      token: ADMIN_TOKEN,
      body,
      headers: { "content-length": "3" },
    });
    expect(((await dots.json()) as { name: string }).name).toBe("file");
    for (const extra of await inboxOf(alice.token)) {
      await client.call("POST", `/v1/inbox/${extra.itemId}/ack`, { token: alice.token });
    }
    await client.call("POST", `/v1/sessions/${alice.sessionId}/inbox?name=a.bin`, {
      token: ADMIN_TOKEN,
      body,
      headers: { "content-length": "3" },
    });
    const [item] = await inboxOf(alice.token);
    expect(
      await errorOf(
        await client.call("POST", `/v1/inbox/${item!.itemId}/ack`, { token: bob.token }),
      ),
    ).toMatchObject({
      status: 404,
      code: "inbox_item_not_found",
    });
  });
});

describe("POST /v1/sessions/:id/inbox within the session's quota", () => {
  function seed(sessionId: string, name: string, bytes: Uint8Array) {
    return client.call("POST", `/v1/sessions/${sessionId}/inbox?name=${encodeURIComponent(name)}`, {
      token: ADMIN_TOKEN,
      body: bytes,
      headers: { "content-length": String(bytes.byteLength) },
    });
  }

  it("refuses a seed over the quota with 413 quota_exceeded and stores nothing", async () => {
    const { sessionId, token } = await client.mintSession({ quotaBytes: 50_000 });
    expect((await seed(sessionId, "first.bin", randomBytes(30_000))).status).toBe(201);
    const bytes = randomBytes(30_000);
    expect(await errorOf(await seed(sessionId, "second.bin", bytes))).toEqual({
      status: 413,
      code: "quota_exceeded",
      message: "file is 29 KiB and the session has 20 KiB of its byte quota left",
    });
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["first.bin"]);
    expect(await env.BUCKET.head(blobKey(await sha256Hex(bytes)))).toBeNull();
  });

  it("lets only one of two seeds that together overflow the quota in", async () => {
    const { sessionId, token } = await client.mintSession({ quotaBytes: 50_000 });
    const answers = await Promise.all([
      seed(sessionId, "a.bin", randomBytes(30_000)),
      seed(sessionId, "b.bin", randomBytes(30_000)),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 413]);
    expect(await inboxOf(token)).toHaveLength(1);
  });

  it("cleans a seed's name of bidi overrides, invisible characters and edge spaces", async () => {
    const { sessionId, token } = await client.mintSession();
    expect((await seed(sessionId, " invoice\u202Efdp.exe ", randomBytes(10))).status).toBe(201);
    // Zero-width characters, word joiner, invisible operators, BOM and Unicode tag characters.
    const hidden = "\ufeffre\u200bpo\u200c\u200drt\u2060\u2064.pdf\u{e0001}\u{e0049}\u{e007f}";
    expect((await seed(sessionId, hidden, randomBytes(10))).status).toBe(201);
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["invoicefdp.exe", "report.pdf"]);
  });
});
