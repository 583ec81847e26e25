import { expect } from "vitest";
import { readConfig } from "../../src/config";
import { hexToBase64 } from "../../src/encoding";
import { partSizeFor } from "../../src/part-plan";
import type { Backend } from "../support/backends";
import { sha256Hex } from "../support/bytes";
import { RelayClient } from "../support/relay-client";
import { partBytes, partDigests } from "../support/send";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";

export const MiB = 1024 * 1024;
/** Two parts: one full 8 MiB part and a short last one. */
export const TWO_PARTS = 8 * MiB + 4096;

export interface LinkState {
  status: "uploading" | "verifying" | "received";
  uploadId: string;
  partSize?: number;
  partCount?: number;
  missing?: number[];
  name?: string;
  size?: number;
  sha256?: string;
}

export interface InboxItem {
  itemId: string;
  source: string;
  name: string;
  size: number;
  sha256: string;
  file: { fileId: string; status: string };
}

/** What every upload-link test file works with on one backend: a client and the page's calls. */
export function uploadLinkHarness(backend: Backend) {
  const client = new RelayClient(backend.env);
  const config = readConfig(backend.env);

  async function createRequest(token: string, body: unknown = {}): Promise<CreatedRequest> {
    const response = await client.call("POST", "/v1/requests", { token, json: body });
    expect(response.status, await response.clone().text()).toBe(201);
    return response.json();
  }

  /** The link's path on the relay: `/u/<token>`. */
  const linkPath = (created: CreatedRequest) => new URL(created.url).pathname;

  async function start(path: string, bytes: Uint8Array, fields: Record<string, unknown> = {}) {
    return client.call("POST", `${path}/uploads`, {
      json: {
        name: "report.bin",
        size: bytes.byteLength,
        sha256: await sha256Hex(bytes),
        partSha256: await partDigests(bytes, bytes.byteLength),
        ...fields,
      },
    });
  }

  async function putPart(path: string, state: LinkState, bytes: Uint8Array, partNumber: number) {
    const part = partBytes(bytes, partSizeFor(bytes.byteLength), partNumber);
    return client.call("PUT", `${path}/uploads/${state.uploadId}/parts/${partNumber}`, {
      body: part,
      headers: {
        "content-length": String(part.byteLength),
        "x-amz-checksum-sha256": hexToBase64(await sha256Hex(part)),
      },
    });
  }

  /** The page's whole flow for honest bytes: start, every part, complete. */
  async function sendThroughPage(path: string, bytes: Uint8Array, name = "report.bin") {
    const started = await start(path, bytes, { name });
    expect(started.status, await started.clone().text()).toBe(201);
    const state = (await started.json()) as LinkState;
    for (const partNumber of state.missing ?? []) {
      const put = await putPart(path, state, bytes, partNumber);
      expect(put.status, await put.clone().text()).toBe(204);
    }
    const done = await client.call("POST", `${path}/uploads/${state.uploadId}/complete`);
    expect(done.status, await done.clone().text()).toBe(200);
    return (await done.json()) as LinkState;
  }

  async function inbox(token: string): Promise<InboxItem[]> {
    const response = await client.call("GET", "/v1/inbox", { token });
    return ((await response.json()) as { items: InboxItem[] }).items;
  }

  async function fileCount(token: string): Promise<number> {
    const response = await client.call("GET", "/v1/files", { token });
    return ((await response.json()) as { files: unknown[] }).files.length;
  }

  async function contentSha(token: string, fileId: string): Promise<string> {
    const response = await client.call("GET", `/v1/files/${fileId}/content`, { token });
    expect(response.status).toBe(200);
    return sha256Hex(await response.arrayBuffer());
  }

  async function requestState(token: string, requestId: string) {
    const response = await client.call("GET", `/v1/requests/${requestId}`, { token });
    expect(response.status).toBe(200);
    return (await response.json()) as { status: string; fileId?: string };
  }

  return {
    client,
    config,
    createRequest,
    linkPath,
    start,
    putPart,
    sendThroughPage,
    inbox,
    fileCount,
    contentSha,
    requestState,
  };
}

export async function sha256Base64(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return btoa(String.fromCharCode(...new Uint8Array(digest)));
}

/** `bytes` as a stream of 1 MiB chunks with no length: a chunked request body. */
export function chunked(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + MiB));
      offset += MiB;
    },
  });
}
