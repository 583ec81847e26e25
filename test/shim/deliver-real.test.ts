// `airlock send --to` against the run's shared relay, which has no chat platform configured: a
// destination the session may not use is refused by the relay, and bad --to / --caption are
// usage errors before any request. Deliveries answered as chosen per destination and attempt
// (no chat platform behind them) stay on the fake relay in deliver.test.ts.
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { USAGE as SHIM_USAGE } from "../../agent-shim/src/cli/help";
import { apiCall } from "../support/api-call";
import { sharedRelay } from "../support/shared-relay";
import { RUNTIMES, failureLine, runShim, relayEnv } from "./run-shim";
import { shimScratchDir } from "./scratch-dir";

const USAGE = SHIM_USAGE.send;
const dir = shimScratchDir("airlock-shim-deliver-real-");

beforeAll(async () => {
  await writeFile(join(dir(), "report.pdf"), `%PDF-1.4\n${randomBytes(2000).toString("hex")}\n`);
});

describe.each(RUNTIMES)("airlock send --to against the relay under $name", ({ node }) => {
  let token: string;
  beforeEach(async () => {
    token = (await sharedRelay().mintSession()).token;
  });
  const send = (args: string[]) =>
    runShim(["send", ...args], { node, cwd: dir(), env: relayEnv(sharedRelay().url, token) });
  const files = async () =>
    (await apiCall(sharedRelay().url, token, "GET", "/v1/files")).body.files as {
      fileId: string;
    }[];

  it("reports a destination the session may not use, still printing the URL", async () => {
    const result = await send(["report.pdf", "--to", "telegram:999"]);
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      "airlock: delivery of report.pdf to telegram:999 failed: destination_not_allowed: this session may not deliver to telegram:999",
    );
    // The file's share URL (signed anew per answer: its expiry and signature may differ).
    const [file] = await files();
    expect(result.stdout).toMatch(new RegExp(`^${sharedRelay().url}/d/${file!.fileId}\\.\\S+\\n$`));

    const json = await send(["report.pdf", "--to", "telegram:999", "--json"]);
    expect(json.code).toBe(1);
    expect(failureLine(json)).toMatch(/failed: destination_not_allowed: /);
    const sent = JSON.parse(json.stdout) as { url: string; deliveries: unknown[] };
    expect(sent.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\//);
    expect(sent.deliveries).toEqual([
      {
        fileId: expect.any(String),
        to: "telegram:999",
        status: "failed",
        error: {
          code: "destination_not_allowed",
          message: "this session may not deliver to telegram:999",
        },
      },
    ]);
  });

  it.each([
    "telegram:abc",
    "whatsapp:+15551234567",
    "slack:c0ffee",
    "telegram:",
    "discord:-5",
    "telegram:1 ",
  ])("refuses --to %j as a usage error before any request", async (to) => {
    const result = await send(["report.pdf", "--to", "telegram:1", "--to", to]);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe(
      `airlock: --to ${to} is not telegram:<chatId>, discord:<channelId>, slack:<channelId> or whatsapp:<wa_id>; usage: ${USAGE}`,
    );
    expect(result.stdout).toBe("");
    expect(await files()).toEqual([]);
  });

  it("refuses --caption without --to before any request", async () => {
    const result = await send(["report.pdf", "--caption", "hello"]);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe(`airlock: --caption needs --to; usage: ${USAGE}`);
    expect(await files()).toEqual([]);
  });
});
