import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import type { Bindings } from "../../src/env";

/** The test environment with some settings changed (undefined: unset). */
function withSettings(settings: Record<string, unknown>): Bindings {
  return { ...(env as Bindings), ...settings } as Bindings;
}

describe("the relay's environment (src/config.ts)", () => {
  it("fills the defaults; an empty value counts as unset, a number from [vars] as its value", () => {
    const config = readConfig(
      withSettings({ LINK_TTL_SECONDS: "", SESSION_TTL_SECONDS: 7200, STORAGE: "R2" }),
    );
    expect(config).toMatchObject({
      storage: "r2",
      linkTtlSeconds: 86_400,
      sessionTtlSeconds: 7200,
      sessionQuotaBytes: 50 * 1024 ** 3,
      maxSessionTtlSeconds: 30 * 86_400,
    });
    expect(config.s3).toBeUndefined();
    expect(config.telegram).toBeUndefined();
  });

  it.each([
    [{ AIRLOCK_ADMIN_TOKEN: "" }, "AIRLOCK_ADMIN_TOKEN is not set"],
    [{ AIRLOCK_SIGNING_KEY: "short" }, "AIRLOCK_SIGNING_KEY must be at least 32 characters"],
    [{ STORAGE: "gcs" }, 'STORAGE must be "r2" or "s3", not "gcs"'],
    [{ STORAGE: "s3", S3_ENDPOINT: "http://127.0.0.1:1" }, "S3_BUCKET is not set"],
    [{ MAX_FILE_BYTES: "1.5" }, 'MAX_FILE_BYTES must be a positive integer, not "1.5"'],
    [{ RELAY_UPLOAD_MAX_BYTES: "0" }, 'RELAY_UPLOAD_MAX_BYTES must be a positive integer, not "0"'],
    [{ WHATSAPP_ACCESS_TOKEN: "t" }, "WHATSAPP_PHONE_NUMBER_ID is not set"],
    // The first bad setting, in the order the sections are read, is the one named.
    [{ FILE_TTL_SECONDS: "x", AIRLOCK_ADMIN_TOKEN: "" }, "AIRLOCK_ADMIN_TOKEN is not set"],
  ])("refuses %j naming the variable", (settings, message) => {
    expect(() => readConfig(withSettings(settings))).toThrow(new Error(message));
  });

  it("reads a platform's settings only when its token is set", () => {
    const config = readConfig(
      withSettings({
        WHATSAPP_ACCESS_TOKEN: "t",
        WHATSAPP_PHONE_NUMBER_ID: "15550001",
        WHATSAPP_API_BASE: "http://127.0.0.1:1/v23.0//",
        SLACK_BOT_TOKEN: "xoxb",
        SLACK_FILE_HOSTS: " a.example, ,b.example ",
        TELEGRAM_WEBHOOK_SECRET: "ignored without a bot token",
      }),
    );
    expect(config.whatsapp).toMatchObject({
      phoneNumberId: "15550001",
      apiBase: "http://127.0.0.1:1/v23.0",
      mediaHosts: ["lookaside.fbsbx.com"],
    });
    expect(config.slack?.fileHosts).toEqual(["a.example", "b.example"]);
    expect(config.telegram).toBeUndefined();
  });
});
