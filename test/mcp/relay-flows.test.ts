import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FileRecord } from "../../src/wire-types";
import { startTelegramFake, type TelegramFake } from "../fixtures/platforms/telegram-fake";
import { randomBytes } from "../support/bytes";
import { startRelay, type RunningRelay } from "../support/relay";
import { callTool, curl, itemsOf, mcpClient, seed, sha256, textOf } from "./relay-support";

/**
 * The `/mcp` tools that reach beyond the session's own files: posting to a chat (a loopback
 * Telegram), asking a person for a file, waiting for one, minting a limited share link.
 */
describe("POST /mcp with chats and people (r2, fake Telegram)", () => {
  const chat = "5151";
  let telegram: TelegramFake;
  let relay: RunningRelay;
  let dir: string;
  let session: { sessionId: string; token: string };
  let client: Client;

  beforeAll(async () => {
    telegram = await startTelegramFake();
    relay = await startRelay({
      vars: { TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: telegram.url },
    });
    dir = await mkdtemp(join(tmpdir(), "airlock-mcp-flows-"));
    session = await relay.mintSession({ destinations: [`telegram:${chat}`] });
    client = await mcpClient(relay, session.token);
  });
  afterAll(async () => {
    await client?.close();
    await relay?.stop();
    await telegram?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function upload(name: string, bytes: Uint8Array): Promise<FileRecord> {
    await writeFile(join(dir, name), bytes);
    const created = await callTool(client, "create_upload", { name });
    const { url } = created.structuredContent as { url: string };
    return JSON.parse((await curl(["-sS", "-T", name, url], dir)).stdout) as FileRecord;
  }

  it("deliver_file posts the exact bytes to a bound chat, and refuses any other", async () => {
    const bytes = randomBytes(20_000);
    const record = await upload("table.bin", bytes);
    const delivered = await callTool(client, "deliver_file", {
      file_id: record.fileId,
      to: `telegram:${chat}`,
      caption: "the table",
    });
    expect(delivered.structuredContent).toMatchObject({
      fileId: record.fileId,
      to: `telegram:${chat}`,
      status: "delivered",
      mode: "native",
      method: "sendDocument",
    });
    expect(textOf(delivered)).toBe(`delivered table.bin to telegram:${chat} (native)`);
    // Asked again with the same arguments (an idempotent tool), it answers the same delivery.
    const again = await callTool(client, "deliver_file", {
      file_id: record.fileId,
      to: `telegram:${chat}`,
      caption: "the table",
    });
    expect(again.structuredContent).toEqual(delivered.structuredContent);
    const sent = telegram.requests("sendDocument").filter((r) => r.fields.chat_id === chat);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.fields.caption).toBe("the table");
    expect(sent[0]?.files[0]).toMatchObject({ filename: "table.bin", sha256: sha256(bytes) });

    const refused = await callTool(client, "deliver_file", {
      file_id: record.fileId,
      to: "telegram:999",
    });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe(
      `relay refused delivery of ${record.fileId} to telegram:999: destination_not_allowed: ` +
        "this session may not deliver to telegram:999",
    );
  });

  it("request_file gives a link a person curl -T's to; receive_files then hands the file back", async () => {
    const asked = await callTool(client, "request_file", { name: "scan.pdf", expires: "10m" });
    const { url, maxBytes } = asked.structuredContent as { url: string; maxBytes: number };
    expect(maxBytes).toBeGreaterThan(0);
    const bytes = randomBytes(30_000);
    await writeFile(join(dir, "their-scan.pdf"), bytes);
    const sent = await curl(["--fail-with-body", "-sS", "-T", "their-scan.pdf", url], dir);
    expect(sent.code, sent.stdout).toBe(0);

    const [item] = itemsOf(await callTool(client, "receive_files"));
    expect(item).toMatchObject({ name: "scan.pdf", size: bytes.length, sha256: sha256(bytes) });
    const got = new Uint8Array(await (await fetch(item!.downloadUrl)).arrayBuffer());
    expect(sha256(got)).toBe(sha256(bytes));
    await expect.poll(async () => itemsOf(await callTool(client, "receive_files"))).toEqual([]);
  });

  it("receive_files with wait_seconds returns a file that arrives while it waits", async () => {
    const bytes = randomBytes(5_000);
    const waiting = callTool(client, "receive_files", { wait_seconds: 20 });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await seed(relay, session.sessionId, "late.txt", bytes);
    const [item] = itemsOf(await waiting);
    expect(item).toMatchObject({ name: "late.txt", sha256: sha256(bytes) });
    await fetch(item!.downloadUrl).then((response) => response.arrayBuffer());
  });

  it("share_link mints a link limited in time and downloads", async () => {
    const bytes = randomBytes(1_000);
    const record = await upload("once.bin", bytes);
    const linked = await callTool(client, "share_link", {
      file_id: record.fileId,
      expires: "1h",
      max_downloads: 1,
    });
    const link = linked.structuredContent as { url: string; expiresAt: string };
    expect(linked.structuredContent).toMatchObject({ fileId: record.fileId, maxDownloads: 1 });
    const hour = Date.parse(link.expiresAt) - Date.now();
    expect(hour).toBeGreaterThan(3_500_000);
    expect(hour).toBeLessThanOrEqual(3_600_000);
    const first = new Uint8Array(await (await fetch(link.url)).arrayBuffer());
    expect(sha256(first)).toBe(sha256(bytes));
    expect((await fetch(link.url)).status).toBe(410);
  });
});
