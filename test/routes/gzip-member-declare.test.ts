import { describe, expect, it } from "vitest";
import { env } from "cloudflare:test";
import { errorOf, RelayClient } from "../support/relay-client";
import { declare } from "../support/send";
import { countingText, gzipMembers } from "../support/gzip-members";

const MiB = 1024 * 1024;

/** `POST /v1/uploads` and `POST /v1/single-uploads` with a gzip member table (docs/api.md). */
describe("the gzip member table in a declare", () => {
  const client = new RelayClient(env);
  const text = countingText(2 * MiB + 1000);

  it("keeps a declared table with the pending upload", async () => {
    const { token, sessionId } = await client.mintSession();
    const { declared, table } = await gzipMembers(text);
    const response = await declare(client, token, { name: "a.txt", ...declared });
    expect(response.status, await response.clone().text()).toBe(201);
    const row = await env.DB.prepare(
      "SELECT member_span, member_sizes FROM uploads WHERE session_id = ?",
    )
      .bind(sessionId)
      .first<{ member_span: number; member_sizes: string }>();
    expect(table.storedSizes).toHaveLength(3);
    expect(row).toEqual({ member_span: MiB, member_sizes: table.storedSizes.join(",") });
  });

  it.each([
    [
      "a count that is not one per span",
      (t: { span: number; storedSizes: number[] }) => ({
        ...t,
        storedSizes: t.storedSizes.slice(1),
      }),
      "members.storedSizes: must list 3 sizes: one per 1048576-byte span of the 2098152 original bytes",
    ],
    [
      "sizes that do not add up to storedSize",
      (t: { span: number; storedSizes: number[] }) => ({
        ...t,
        storedSizes: [t.storedSizes[0]! + 1, ...t.storedSizes.slice(1)],
      }),
      /^members\.storedSizes: add up to \d+, not to storedSize \(\d+\)$/,
    ],
    [
      "a span under 1 MiB",
      (t: { span: number; storedSizes: number[] }) => ({ ...t, span: MiB - 1 }),
      "members.span: must be at least 1048576",
    ],
    [
      "a span over 4 MiB",
      (t: { span: number; storedSizes: number[] }) => ({ ...t, span: 4 * MiB + 1 }),
      "members.span: must be at most 4194304",
    ],
    [
      "a zero size",
      (t: { span: number; storedSizes: number[] }) => ({
        ...t,
        storedSizes: [0, ...t.storedSizes],
      }),
      "members.storedSizes.0: must be positive",
    ],
  ])("refuses %s with 400 and records nothing", async (_, lie, message) => {
    const { token, sessionId } = await client.mintSession();
    const { declared, table } = await gzipMembers(text);
    const response = await declare(client, token, {
      name: "a.txt",
      ...declared,
      members: lie(table),
    });
    const error = await errorOf(response);
    expect(error.status).toBe(400);
    expect(error.code).toBe("invalid_request");
    expect(error.message).toMatch(message);
    const count = await env.DB.prepare("SELECT COUNT(*) AS n FROM uploads WHERE session_id = ?")
      .bind(sessionId)
      .first<{ n: number }>();
    expect(count?.n).toBe(0);
  });

  it("refuses a table on an identity upload", async () => {
    const { token } = await client.mintSession();
    const { table } = await gzipMembers(text);
    const { sha256, size } = (await gzipMembers(text)).declared;
    const response = await declare(client, token, {
      name: "a.txt",
      size,
      sha256,
      encoding: "identity",
      storedSize: size,
      storedSha256: sha256,
      members: table,
    });
    expect(await errorOf(response)).toMatchObject({
      status: 400,
      code: "invalid_request",
      message: 'members: members goes only with "encoding": "gzip"',
    });
  });

  it("accepts the table in a one-request upload's query and refuses half of it", async () => {
    const { token } = await client.mintSession();
    const small = countingText(MiB + 10);
    const { declared, stored, table } = await gzipMembers(small);
    const query = new URLSearchParams({
      name: "b.txt",
      size: String(declared.size),
      sha256: declared.sha256,
      encoding: "gzip",
      storedSha256: declared.storedSha256,
      memberSpan: String(table.span),
    });
    const half = await client.call("POST", `/v1/single-uploads?${query}`, {
      token,
      body: stored,
      headers: { "content-length": String(stored.byteLength) },
    });
    expect(await errorOf(half)).toMatchObject({
      status: 400,
      code: "invalid_request",
      message: "memberSpan: memberSpan and memberSizes go together",
    });
    query.set("memberSizes", table.storedSizes.join(","));
    const whole = await client.call("POST", `/v1/single-uploads?${query}`, {
      token,
      body: stored,
      headers: { "content-length": String(stored.byteLength) },
    });
    expect(whole.status, await whole.clone().text()).toBe(201);
  });
});
