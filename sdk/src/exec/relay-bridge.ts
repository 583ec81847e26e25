/**
 * The exec transport joined to the relay: a relay file pushed into a sandbox, a sandbox file
 * collected into a session's files (`POST /v1/sessions/:id/files`).
 */
import { segment, type CallOptions, type Transport } from "../http.js";
import type { FileReader } from "../node-files.js";
import type { FileRecord } from "../types.js";
import { collectStream, type CollectOptions } from "./collect.js";
import type { ExecAdapter } from "./exec.js";
import { pushStream, type PushOptions, type PushResult } from "./push.js";

/** Options for pushing a relay file into a sandbox. */
export type PushFileOptions = PushOptions & CallOptions;

/** Options for collecting a sandbox file into a session. */
export interface CollectFileOptions extends CollectOptions, CallOptions {
  /** The file's name at the relay; default the path's base name (cleaned by the relay's name rule). */
  name?: string;
  /** MIME type; default `application/octet-stream`. */
  contentType?: string;
}

/** A pushed relay file: the file record, and how the bytes went. */
export type PushedFile = PushResult & { file: FileRecord };

export async function pushRelayFile(
  files: FileReader,
  exec: ExecAdapter,
  fileId: string,
  path: string,
  options: PushFileOptions = {},
): Promise<PushedFile> {
  const file = await files.getFile(fileId, options);
  const response = await files.download(fileId, options);
  const body = response.body ?? new Blob([]).stream();
  const pushed = await pushStream(exec, body, path, {
    ...options,
    sha256: file.sha256,
    size: file.size,
  });
  return { ...pushed, file };
}

export async function collectIntoSession(
  transport: Transport,
  token: string,
  exec: ExecAdapter,
  sessionId: string,
  path: string,
  options: CollectFileOptions = {},
): Promise<FileRecord> {
  const collected = await collectStream(exec, path, options);
  const name = options.name ?? path.split("/").filter(Boolean).pop() ?? "file";
  try {
    return await transport.json<FileRecord>({
      method: "POST",
      path: `/v1/sessions/${segment(sessionId)}/files`,
      token,
      query: { name },
      body: {
        data: collected.stream,
        size: collected.size,
        contentType: options.contentType ?? "application/octet-stream",
      },
      signal: options.signal,
    });
  } catch (error) {
    await collected.stream.cancel().catch(() => undefined);
    // Bytes that did not arrive intact are the cause of whatever the upload then met.
    throw collected.failure() ?? error;
  }
}
