import { env } from "cloudflare:test";
import { expect } from "vitest";
import { setupFor } from "../../src/app";
import { findFileIncludingDeleted } from "../../src/db/files";
import { recordArchiveListing } from "../../src/services/sharing/archive-listing";
import type { FileRecord } from "../../src/services/file-record";
import { depsAt } from "../support/deps";
import { RelayClient } from "../support/relay-client";
import {
  complete,
  declare,
  describe as describeBytes,
  putBytes,
  type UploadAnswer,
} from "../support/send";

/** What the share-page test files share: a client, a sender, a browser's fetch, a tar builder. */
export const client = new RelayClient(env);
export const signingKey = "test-signing-key-0123456789abcdef";
export const BROWSER_ACCEPT =
  "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
export const encode = (text: string) => new TextEncoder().encode(text);

/** Sends `bytes` through the whole upload path, declaring `contentType` as a client may. */
export async function sent(
  bytes: Uint8Array,
  name: string,
  contentType?: string,
): Promise<FileRecord> {
  const { token } = await client.mintSession();
  const { declared, stored } = await describeBytes(bytes, name);
  const answer = (await (
    await declare(client, token, { ...declared, contentType })
  ).json()) as UploadAnswer;
  if (answer.status === "deduped") return answer.file;
  if (answer.status !== "upload") throw new Error(`unexpected answer ${JSON.stringify(answer)}`);
  expect((await putBytes(client, answer.put, stored)).ok).toBe(true);
  const done = await complete(client, token, answer.uploadId);
  expect(done.status).toBe(201);
  return done.json();
}

/** What the verification consumer does for an archive: list it once into D1. */
export async function listArchive(file: FileRecord): Promise<void> {
  const row = await findFileIncludingDeleted(env.DB, file.fileId);
  await recordArchiveListing(depsAt(env, setupFor(env).store, Date.now()), row!);
}

export function browse(url: string, init: RequestInit = {}): Promise<Response> {
  return client.fetch(url, { ...init, headers: { accept: BROWSER_ACCEPT, ...init.headers } });
}

export async function page(url: string): Promise<string> {
  const response = await browse(url);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
  return response.text();
}

/** A ustar archive of the given entries, with the contents as described. */
export function tar(
  entries: { name: string; size?: number; type?: string; link?: string; prefix?: string }[],
): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (const entry of entries) {
    const header = new Uint8Array(512);
    const put = (offset: number, text: string) => header.set(encode(text), offset);
    const size = entry.size ?? 0;
    put(0, entry.name);
    put(100, "0000644\0");
    put(108, "0000000\0");
    put(116, "0000000\0");
    put(124, `${size.toString(8).padStart(11, "0")}\0`);
    put(136, "00000000000\0");
    put(148, "        ");
    put(156, entry.type ?? "0");
    put(157, entry.link ?? "");
    put(257, "ustar\u000000");
    put(345, entry.prefix ?? "");
    const sum = header.reduce((total, byte) => total + byte, 0);
    put(148, `${sum.toString(8).padStart(6, "0")}\0 `);
    blocks.push(header, new Uint8Array(Math.ceil(size / 512) * 512).fill(0x61));
  }
  blocks.push(new Uint8Array(1024));
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.byteLength, 0));
  let offset = 0;
  for (const block of blocks) {
    out.set(block, offset);
    offset += block.byteLength;
  }
  return out;
}
