// `airlock send --to` against the fake relay, which answers each delivery as chosen per
// destination and attempt with no chat platform behind it (the shared relay has none
// configured): modes and methods, retries under one Idempotency-Key, refusals. What the real
// relay answers without a platform is in deliver-real.test.ts.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Call } from "./fake-relay";
import { sendAgainstFakeRelay } from "./send-against-fake-relay";
import { RUNTIMES, failureLine, prepareShim } from "./run-shim";

let dir: string;

beforeAll(async () => {
  prepareShim();
  dir = await mkdtemp(join(tmpdir(), "airlock-shim-deliver-"));
  await writeFile(join(dir, "report.pdf"), `%PDF-1.4\n${randomBytes(2000).toString("hex")}\n`);
  await writeFile(join(dir, "notes.txt"), `notes ${randomBytes(8).toString("hex")}\n`);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each(RUNTIMES)("airlock send --to under $name", ({ node }) => {
  const ctx = sendAgainstFakeRelay(node, () => dir);

  const deliveryCalls = (): Call[] => ctx.relay.calls.filter((c) => c.path.endsWith("/deliveries"));

  it("delivers to each destination after the upload, one line each on stderr", async () => {
    ctx.relay.setDeliveryRule((to) =>
      to.startsWith("discord:") ? { mode: "link", method: "channels.messages" } : undefined,
    );
    const result = await ctx.send([
      "report.pdf",
      "--to",
      "telegram:-100123",
      "--to",
      "discord:456",
      "--caption",
      "Q3 report",
    ]);
    expect(result.code).toBe(0);
    const [file] = [...ctx.relay.files.values()];
    expect(result.stdout).toBe(`${file!.url}\n`);
    expect(result.stderrLines).toEqual([
      "delivered report.pdf to telegram:-100123 (native, sendDocument)",
      "delivered report.pdf to discord:456 (link)",
    ]);
    // Deliveries come after the upload is complete, for the file it registered.
    const routes = ctx.relay.routes();
    const completed = routes.findIndex((r) => r.endsWith("/complete"));
    const path = `/v1/files/${file!.fileId}/deliveries`;
    expect(routes.slice(completed + 1)).toEqual([`POST ${path}`, `POST ${path}`]);
    // The deliveries run in parallel: their requests may arrive in either order.
    const calls = deliveryCalls();
    const byTo = (a: unknown, b: unknown) =>
      String((a as { to: string }).to).localeCompare(String((b as { to: string }).to));
    expect(calls.map((c) => c.json).sort(byTo)).toEqual([
      { to: "discord:456", caption: "Q3 report" },
      { to: "telegram:-100123", caption: "Q3 report" },
    ]);
    const keys = calls.map((c) => c.headers["idempotency-key"]);
    for (const key of keys) expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(keys[0]).not.toBe(keys[1]);
  });

  it("puts the relay's delivery records in --json, and sends no caption when none is given", async () => {
    ctx.relay.setDeliveryRule((to) =>
      to.startsWith("slack:")
        ? { mode: "native", method: "files.completeUploadExternal" }
        : undefined,
    );
    const result = await ctx.send(["report.pdf", "notes.txt", "--to", "slack:C0FFEE", "--json"]);
    expect(result.stderr).toBe(
      "delivered report.pdf to slack:C0FFEE (native, files.completeUploadExternal)\n" +
        "delivered notes.txt to slack:C0FFEE (native, files.completeUploadExternal)\n",
    );
    expect(result.code).toBe(0);
    const lines = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { fileId: string; deliveries: unknown[] });
    expect(lines).toHaveLength(2);
    expect(lines.map((l) => l.deliveries)).toEqual(ctx.relay.deliveries.map((d) => [d]));
    expect(lines.map((l) => l.fileId)).toEqual(ctx.relay.deliveries.map((d) => d.fileId));
    expect(deliveryCalls().map((c) => c.json)).toEqual([
      { to: "slack:C0FFEE" },
      { to: "slack:C0FFEE" },
    ]);
  });

  it("retries a failed delivery request with the same Idempotency-Key, so it posts once", async () => {
    ctx.relay.setDeliveryRule((_to, attempt) =>
      attempt === 0
        ? { status: 503, code: "unavailable", message: "try later" }
        : attempt === 1
          ? { status: 409, code: "delivery_in_progress", message: "still sending" }
          : undefined,
    );
    const result = await ctx.send(["report.pdf", "--to", "telegram:123"]);
    expect(result.stderrLines).toEqual([
      "delivered report.pdf to telegram:123 (native, sendDocument)",
    ]);
    expect(result.code).toBe(0);
    const keys = deliveryCalls().map((c) => c.headers["idempotency-key"]);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(ctx.relay.deliveries).toHaveLength(1);
  });

  it("reports a failed first attempt that the relay returns for a repeated key", async () => {
    ctx.relay.setDeliveryRule(() => ({
      mode: "native",
      method: "document",
      error: "could not reach telegram: timed out",
    }));
    const result = await ctx.send(["report.pdf", "--to", "telegram:123", "--json"]);
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      "airlock: delivery of report.pdf to telegram:123 failed: could not reach telegram: timed out",
    );
    const sent = JSON.parse(result.stdout) as { deliveries: unknown[] };
    expect(sent.deliveries).toEqual(ctx.relay.deliveries);
    expect(sent.deliveries).toEqual([
      expect.objectContaining({ status: "failed", error: "could not reach telegram: timed out" }),
    ]);
  });

  it("does not retry a platform the relay could not reach through its own retries", async () => {
    ctx.relay.setDeliveryRule(() => ({
      status: 504,
      code: "platform_unreachable",
      message: "could not reach telegram: timed out",
    }));
    const result = await ctx.send(["report.pdf", "--to", "telegram:123"]);
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      "airlock: delivery of report.pdf to telegram:123 failed: platform_unreachable: could not reach telegram: timed out",
    );
    expect(deliveryCalls()).toHaveLength(1);
  });

  it("gives the same delivery the same key: asking again returns the first delivery", async () => {
    const result = await ctx.send([
      "report.pdf",
      "--to",
      "telegram:123",
      "--to",
      "telegram:123",
      "--caption",
      "once",
    ]);
    expect(result.code).toBe(0);
    // A repeated --to is asked once; the key would make a second ask harmless anyway.
    expect(deliveryCalls()).toHaveLength(1);
    expect(ctx.relay.deliveries).toHaveLength(1);
  });

  it("reports a delivery the platform refused without retrying it, prints the URL, exits 1", async () => {
    ctx.relay.setDeliveryRule((to) =>
      to === "telegram:123"
        ? { status: 502, code: "delivery_failed", message: "Bad Request: chat not found" }
        : undefined,
    );
    const result = await ctx.send([
      "report.pdf",
      "notes.txt",
      "--to",
      "telegram:123",
      "--to",
      "discord:456",
    ]);
    expect(result.code).toBe(1);
    const urls = [...ctx.relay.files.values()].map((f) => f.url);
    expect(result.stdout).toBe(`${urls[0]}\n${urls[1]}\n`);
    expect(result.stderrLines).toEqual([
      "airlock: delivery of report.pdf to telegram:123 failed: delivery_failed: Bad Request: chat not found",
      "delivered report.pdf to discord:456 (native, sendDocument)",
      "airlock: delivery of notes.txt to telegram:123 failed: delivery_failed: Bad Request: chat not found",
      "delivered notes.txt to discord:456 (native, sendDocument)",
    ]);
    // Per file the two deliveries run in parallel; each file's after the one before.
    const tos = deliveryCalls().map((c) => (c.json as { to: string }).to);
    expect(tos.slice(0, 2).sort()).toEqual(["discord:456", "telegram:123"]);
    expect(tos.slice(2).sort()).toEqual(["discord:456", "telegram:123"]);
  });
});
