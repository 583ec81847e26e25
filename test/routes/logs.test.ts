import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loggablePath } from "../../src/log";
import { logText, randomBytes } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { RelayClient } from "../support/relay-client";
import { upload } from "../support/send";

const fakes = new PlatformFakes();

/** Every structured log line written while `run` runs, parsed. */
async function captureLogs(
  run: () => Promise<void>,
): Promise<{ lines: Record<string, unknown>[]; raw: string }> {
  const written: string[] = [];
  for (const method of ["log", "warn", "error"] as const) {
    vi.spyOn(console, method).mockImplementation(
      (line: unknown) => void written.push(String(line)),
    );
  }
  await run();
  const lines = written
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { lines, raw: written.join("\n") };
}

afterEach(() => vi.restoreAllMocks());

describe("structured logs", () => {
  it("record uploads, completions, verification and deliveries with ids, sizes and durations, never secrets", async () => {
    const client = new RelayClient(fakes.env(env));
    const chat = uniqueChatId();
    const { token } = await client.mintSession({ destinations: [`telegram:${chat}`] });
    let shareUrl = "";
    const { lines, raw } = await captureLogs(async () => {
      const file = await upload(client, token, logText(2000), "notes.log", "gzip");
      shareUrl = file.url;
      await client.call("POST", `/v1/files/${file.fileId}/deliveries`, {
        token,
        json: { to: `telegram:${chat}` },
      });
      await upload(client, token, randomBytes(100), "tiny.bin");
    });
    const events = lines.map((l) => l.event);
    expect(events).toEqual(
      expect.arrayContaining([
        "upload_declared",
        "upload_completed",
        "upload_verified",
        "delivery",
      ]),
    );
    const completed = lines.find((l) => l.event === "upload_completed");
    expect(completed).toMatchObject({
      level: "info",
      fileId: expect.stringMatching(/^fil_/),
      size: expect.any(Number),
    });
    expect(completed?.durationMs).toEqual(expect.any(Number));
    expect(lines.find((l) => l.event === "delivery")).toMatchObject({
      status: "delivered",
      mode: "native",
    });
    expect(raw).not.toContain(token);
    expect(raw).not.toContain(shareUrl.split("/d/")[1]);
    expect(raw).not.toMatch(/sig=|X-Amz-Signature/);
  });

  it("cut share-link tokens out of logged paths", () => {
    expect(loggablePath("/d/fil_abc.123.sig")).toBe("/d/<token>");
    expect(loggablePath("/v1/files/fil_abc")).toBe("/v1/files/fil_abc");
  });

  it("cut upload-link tokens out of logged paths, under the link too", () => {
    const token = "Zm9vYmFyLXVwbG9hZC1saW5rLXRva2VuLTAxMjM0NTY3";
    expect(loggablePath(`/u/${token}`)).toBe("/u/<token>");
    expect(loggablePath(`/u/${token}/`)).toBe("/u/<token>/");
    expect(loggablePath(`/u/${token}/uploads`)).toBe("/u/<token>/uploads");
    expect(loggablePath(`/u/${token}/uploads/upl_x/parts/3`)).toBe(
      "/u/<token>/uploads/upl_x/parts/3",
    );
    expect(loggablePath(`/u/${token}/uploads/upl_x/complete`)).not.toContain(token);
    expect(loggablePath("/v1/requests/req_abc")).toBe("/v1/requests/req_abc");
    expect(loggablePath("/v1/uploads/upl_abc")).toBe("/v1/uploads/upl_abc");
    expect(loggablePath("/uploads/u/abc")).toBe("/uploads/u/abc");
  });
});
