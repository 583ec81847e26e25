import { expect } from "vitest";
import { readConfig } from "../../src/config";
import { sessionUsage } from "../../src/db/sessions";
import { createBlobStore } from "../../src/storage";
import type { FileRecord } from "../../src/wire-types";
import type { Backend } from "../support/backends";
import { RelayClient } from "../support/relay-client";
import { describe as describeBytes, type Declared } from "../support/send";

/** `POST /v1/single-uploads`: the declaration in the query, the stored bytes as the body. */
export function sendOne(
  client: RelayClient,
  token: string,
  declared: Declared,
  body: Uint8Array,
  headers: Record<string, string> = {},
): Promise<Response> {
  const { name, size, sha256, contentType, encoding, storedSha256 } = declared;
  const query = new URLSearchParams({ name, size: String(size), sha256, encoding, storedSha256 });
  if (contentType) query.set("contentType", contentType);
  return client.call("POST", `/v1/single-uploads?${query}`, {
    token,
    body,
    headers: { "content-length": String(body.byteLength), ...headers },
  });
}

interface UploadRow {
  id: string;
  status: string;
  stored_key: string;
}

/** What every single-upload test file works with on one backend: a client, the store, D1 reads. */
export function singleUploadHarness(backend: Backend) {
  const client = new RelayClient(backend.env);
  const store = createBlobStore(readConfig(backend.env), backend.env);

  const uploadsOf = async (sessionId: string) =>
    (
      await backend.env.DB.prepare(
        "SELECT id, status, stored_key FROM uploads WHERE session_id = ?",
      )
        .bind(sessionId)
        .all<UploadRow>()
    ).results;

  const filesOf = async (token: string) => {
    const listed = await client.call("GET", "/v1/files", { token });
    return ((await listed.json()) as { files: FileRecord[] }).files;
  };

  /** The bytes the session holds against its quota now. */
  const usageOf = (sessionId: string) => sessionUsage(backend.env.DB, sessionId, Date.now());

  /** Sends honest bytes in one request; returns the file and the session. */
  async function sendHonest(
    bytes: Uint8Array,
    encoding: "identity" | "gzip",
    session?: { sessionId: string; token: string },
  ) {
    const owner = session ?? (await client.mintSession());
    const { declared, stored } = await describeBytes(bytes, "notes.txt", encoding);
    const response = await sendOne(client, owner.token, declared, stored);
    expect(response.status, await response.clone().text()).toBe(201);
    return { file: (await response.json()) as FileRecord, session: owner, stored };
  }

  /**
   * `bytes` sent as they are by a session of a new owner, and another session of that owner
   * (minted with `body`), whose one-request upload of them is a dedup hit.
   */
  async function siblingOfHolder(bytes: Uint8Array, body: Record<string, unknown> = {}) {
    const owner = `single-${crypto.randomUUID()}`;
    const held = await sendHonest(bytes, "identity", await client.mintSession({ owner }));
    return { held, session: await client.mintSession({ owner, ...body }) };
  }

  return { client, store, uploadsOf, filesOf, usageOf, sendHonest, siblingOfHolder };
}
