// `airlock send --media-tag`: what a MEDIA: gateway reads from the shim
// (docs/agent-integration.md). Plain sends run against the run's shared relay; the cases with
// deliveries against the fake relay, which answers them as chosen per destination with no chat
// platform behind them (the shared relay has none configured).
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { apiCall } from "../support/api-call";
import { sharedRelay } from "../support/shared-relay";
import { sendAgainstFakeRelay } from "./send-against-fake-relay";
import { RUNTIMES, runShim, relayEnv } from "./run-shim";
import { shimScratchDir } from "./scratch-dir";

/** What a line of `send --json` holds that these tests look at. */
interface Sent {
  url: string;
  name: string;
  deliveries: { to: string; status: string }[];
}

const scratch = shimScratchDir("airlock-shim-media-tag-");
let dir: string;

beforeAll(async () => {
  dir = scratch();
  await writeFile(join(dir, "report.pdf"), `%PDF-1.4\n${randomBytes(2000).toString("hex")}\n`);
  await writeFile(join(dir, "chart.png"), randomBytes(3000));
  await writeFile(join(dir, "-odd name.txt"), "a name that starts with a dash\n");
});

describe.each(RUNTIMES)("airlock send --media-tag to the relay under $name", ({ node }) => {
  it("prints MEDIA:<url> per file instead of the bare URL", async () => {
    const { token } = await sharedRelay().mintSession();
    const env = relayEnv(sharedRelay().url, token);
    const result = await runShim(["send", "report.pdf", "chart.png", "--media-tag"], {
      node,
      cwd: dir,
      env,
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    // Each file's share URL (signed anew per answer: its expiry and signature may differ).
    const listed = await apiCall(sharedRelay().url, token, "GET", "/v1/files");
    const id = (name: string) =>
      (listed.body.files as { name: string; fileId: string }[]).find((f) => f.name === name)!
        .fileId;
    const url = (name: string) => `${sharedRelay().url}/d/${id(name)}\\.\\S+`;
    expect(result.stdout).toMatch(
      new RegExp(`^MEDIA:${url("report.pdf")}\\nMEDIA:${url("chart.png")}\\n$`),
    );
  });
});

// Deliveries answered as chosen per destination, with no chat platform behind them: the fake.
describe.each(RUNTIMES)("airlock send --media-tag under $name", ({ node }) => {
  const ctx = sendAgainstFakeRelay(node, () => dir);

  const urls = () => [...ctx.relay.files.values()].map((f) => f.url);

  it("prints the MEDIA line before deliveries, and keeps it when a delivery fails", async () => {
    ctx.relay.setDeliveryRule((to) =>
      to === "telegram:123"
        ? { status: 502, code: "delivery_failed", message: "Bad Request: chat not found" }
        : undefined,
    );
    const result = await ctx.send([
      "report.pdf",
      "--media-tag",
      "--to",
      "telegram:123",
      "--to",
      "discord:456",
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(`MEDIA:${urls()[0]}\n`);
    expect(result.stderrLines).toEqual([
      "airlock: delivery of report.pdf to telegram:123 failed: delivery_failed: Bad Request: chat not found",
      "delivered report.pdf to discord:456 (native, sendDocument)",
    ]);
  });

  it("with --json, prints per file the MEDIA line, then the JSON line", async () => {
    const result = await ctx.send([
      "report.pdf",
      "chart.png",
      "--json",
      "--media-tag",
      "--to",
      "slack:C0FFEE",
    ]);
    expect(result.code).toBe(0);
    const lines = result.stdout.replace(/\n$/, "").split("\n");
    expect(lines).toHaveLength(4);
    const [report, chart] = urls();
    expect(lines[0]).toBe(`MEDIA:${report}`);
    expect(lines[2]).toBe(`MEDIA:${chart}`);
    const sent = [lines[1], lines[3]].map((line) => JSON.parse(line!) as Sent);
    expect(sent.map((s) => [s.name, s.url])).toEqual([
      ["report.pdf", report],
      ["chart.png", chart],
    ]);
    expect(sent.map((s) => s.deliveries.map((d) => d.status))).toEqual([
      ["delivered"],
      ["delivered"],
    ]);
  });

  it("runs send_file as the docs map it, whatever the caption and path start with", async () => {
    // docs/agent-integration.md: options as --name=value, the path after `--`.
    const args = { path: "-odd name.txt", caption: "--json -- sure?", to: ["telegram:-100123"] };
    const result = await ctx.send([
      "--json",
      ...args.to.map((to) => `--to=${to}`),
      `--caption=${args.caption}`,
      "--",
      args.path,
    ]);
    expect(result.code).toBe(0);
    const sent = JSON.parse(result.stdout) as Sent;
    expect(sent.name).toBe("-odd name.txt");
    expect(sent.url).toBe(urls()[0]);
    expect(sent.deliveries).toEqual([
      expect.objectContaining({ to: "telegram:-100123", status: "delivered" }),
    ]);
    const delivery = ctx.relay.calls.find((c) => c.path.endsWith("/deliveries"));
    expect(delivery?.json).toEqual({ to: "telegram:-100123", caption: "--json -- sure?" });
  });
});
