import { hexToBase64 } from "../../src/encoding";
import type { FileRecord } from "../../src/services/file-record";
import type { PutInstructions } from "../../src/storage/blob-store";
import { partCount, partSizeFor } from "../../src/part-plan";
import type { UploadAnswer } from "../../src/wire-types";
import { gzip, sha256Hex } from "./bytes";
import type { RelayClient } from "./relay-client";

export interface Declared {
  name: string;
  size: number;
  sha256: string;
  contentType?: string;
  encoding: "identity" | "gzip";
  storedSize: number;
  storedSha256: string;
}

/** Describes `bytes` as the shim would, gzipped or not. */
export async function describe(
  bytes: Uint8Array,
  name: string,
  encoding: "identity" | "gzip" = "identity",
) {
  const stored = encoding === "gzip" ? await gzip(bytes) : bytes;
  const declared: Declared = {
    name,
    size: bytes.byteLength,
    sha256: await sha256Hex(bytes),
    encoding,
    storedSize: stored.byteLength,
    storedSha256: await sha256Hex(stored),
  };
  return { declared, stored };
}

export type { UploadAnswer, MultipartAnswer, UploadState } from "../../src/wire-types";

/** The SHA-256 of each part of `stored`, cut as the shim cuts them for a file of `size` bytes. */
export async function partDigests(stored: Uint8Array, size: number): Promise<string[]> {
  const partSize = partSizeFor(size);
  const count = partCount(stored.byteLength, partSize);
  return Promise.all(
    Array.from({ length: count }, (_, i) => sha256Hex(partBytes(stored, partSize, i + 1))),
  );
}

/** Part `partNumber` (1-based) of `stored`. */
export function partBytes(stored: Uint8Array, partSize: number, partNumber: number): Uint8Array {
  return stored.subarray((partNumber - 1) * partSize, partNumber * partSize);
}

export async function declare(
  client: RelayClient,
  token: string,
  body: unknown,
): Promise<Response> {
  return client.call("POST", "/v1/uploads", { token, json: body });
}

/** PUTs `bytes` with the headers the relay asked for, optionally overriding some. */
export function putBytes(
  client: RelayClient,
  put: PutInstructions,
  bytes: Uint8Array,
  override: Record<string, string> = {},
): Promise<Response> {
  return client.fetch(put.url, {
    method: "PUT",
    headers: { ...put.headers, ...override },
    body: bytes,
  });
}

export function complete(client: RelayClient, token: string, uploadId: string): Promise<Response> {
  return client.call("POST", `/v1/uploads/${uploadId}/complete`, { token });
}

/** The whole send path for honest bytes; returns the file record. */
export async function upload(
  client: RelayClient,
  token: string,
  bytes: Uint8Array,
  name: string,
  encoding: "identity" | "gzip" = "identity",
): Promise<FileRecord & { uploadedBytes: number; uploadId: string }> {
  const { declared, stored } = await describe(bytes, name, encoding);
  const answer = (await (await declare(client, token, declared)).json()) as UploadAnswer;
  if (answer.status === "deduped") return { ...answer.file, uploadedBytes: 0, uploadId: "" };
  if (answer.status !== "upload") throw new Error(`unexpected answer ${JSON.stringify(answer)}`);
  const put = await putBytes(client, answer.put, stored);
  if (!put.ok) throw new Error(`PUT failed: ${put.status} ${await put.text()}`);
  const done = await complete(client, token, answer.uploadId);
  if (done.status !== 201) throw new Error(`complete failed: ${done.status} ${await done.text()}`);
  return {
    ...((await done.json()) as FileRecord),
    uploadedBytes: stored.byteLength,
    uploadId: answer.uploadId,
  };
}

export { hexToBase64 };
