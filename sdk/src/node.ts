/**
 * Node.js entry (`airlock-relay-sdk/node`): everything the core entry exports, with clients that
 * also take file paths. Seeding from a path streams the file (never read whole into
 * memory); `downloadToFile` streams to disk through a temp file, checks the SHA-256 and
 * renames into place; `downloadToDir` does the same under the file's cleaned name in a directory.
 *
 * ```ts
 * import { AirlockClient } from "airlock-relay-sdk/node";
 *
 * const airlock = new AirlockClient({ url: process.env.AIRLOCK_URL!, adminToken: process.env.AIRLOCK_ADMIN_TOKEN });
 * const { sessionId, token } = await airlock.createSession({ ttlSeconds: 3600 });
 * await airlock.seedInbox(sessionId, "./brief.pdf");
 * // … run the agent with AIRLOCK_TOKEN=token …
 * for (const file of await airlock.listFiles({ sessionId, origin: "sandbox" })) // not ./brief.pdf
 *   await airlock.downloadToDir(file.fileId, "./out"); // under its cleaned name, never outside ./out
 * ```
 *
 * @module
 */
import {
  AirlockClient as CoreClient,
  AirlockSession as CoreSession,
  type AirlockSessionOptions,
} from "./client.js";
import type { CallOptions } from "./http.js";
import {
  collectIntoSession,
  pushRelayFile,
  type CollectFileOptions,
  type PushedFile,
  type PushFileOptions,
} from "./exec/relay-bridge.js";
import type { ExecAdapter } from "./exec/exec.js";
import { downloadToDir, downloadToFile, openFile, type DownloadedFile } from "./node-files.js";
import type {
  BytesInput,
  FileRecord,
  InboxRecord,
  SeedOptions,
  StreamSeedOptions,
} from "./types.js";

export * from "./index.js";
export {
  downloadToDir,
  downloadToFile,
  openFile,
  type DownloadedFile,
  type FileReader,
  type FileSource,
} from "./node-files.js";
export { cleanFileName } from "../../src/names.js";
export {
  spawnCli,
  spawnCliWithFiles,
  type ExecAdapter,
  type ExecExit,
  type ExecRun,
  type LocalFiles,
} from "./exec/exec.js";
export {
  dockerExec,
  kubectlExec,
  shellQuote,
  sshExec,
  type DockerExecOptions,
  type KubectlExecOptions,
  type SshExecOptions,
} from "./exec/adapters.js";
export { pushStream, type PushOptions, type PushResult, type PushSource } from "./exec/push.js";
export { collectStream, type CollectedStream, type CollectOptions } from "./exec/collect.js";
export {
  collectToLocalFile,
  pushLocalFile,
  type CollectedFile,
  type PushLocalOptions,
} from "./exec/local-files.js";
export type { CollectFileOptions, PushedFile, PushFileOptions } from "./exec/relay-bridge.js";

/** Options for seeding from a path: the name defaults to the file's base name. */
export interface PathSeedOptions extends CallOptions {
  /** The name the sandbox sees; default: the path's base name. */
  name?: string;
  /** MIME type; default `application/octet-stream`. */
  contentType?: string;
}

/**
 * The operator's client (see the core `AirlockClient`), plus, in Node: `seedInbox` from a
 * file path and {@link AirlockClient.downloadToFile}. `asSession` gives a Node {@link AirlockSession}.
 */
export class AirlockClient extends CoreClient {
  /**
   * Seeds a session's inbox from bytes, a sized `ReadableStream`, or a file path (streamed
   * from disk, its size from `fstat`).
   */
  override seedInbox(
    sessionId: string,
    path: string,
    options?: PathSeedOptions,
  ): Promise<InboxRecord>;
  override seedInbox(
    sessionId: string,
    input: BytesInput,
    options: SeedOptions,
  ): Promise<InboxRecord>;
  override seedInbox(
    sessionId: string,
    input: ReadableStream<Uint8Array>,
    options: StreamSeedOptions,
  ): Promise<InboxRecord>;
  override async seedInbox(
    sessionId: string,
    input: string | BytesInput | ReadableStream<Uint8Array>,
    options?: PathSeedOptions & { size?: number },
  ): Promise<InboxRecord> {
    if (typeof input !== "string")
      // The core checks the input and its options at run time, whichever overload was used.
      return super.seedInbox(
        sessionId,
        input as ReadableStream<Uint8Array>,
        options as StreamSeedOptions,
      );
    const file = await openFile(input);
    try {
      return await super.seedInbox(sessionId, file.stream, {
        ...options,
        name: options?.name ?? file.name,
        size: file.size,
      });
    } finally {
      await file.close().catch(() => undefined);
    }
  }

  /**
   * Streams a file (any session's) to `path`: temp file, SHA-256 and size checked against the
   * file record, then renamed into place. Returns the file record.
   */
  downloadToFile(fileId: string, path: string, options: CallOptions = {}): Promise<FileRecord> {
    return downloadToFile(this, fileId, path, options);
  }

  /**
   * Streams a file (any session's) into `dir` under its own name, cleaned by the shared name
   * rule and numbered rather than replacing a file: the safe way to save files by the names the
   * relay gives. Returns the file record with the `path` written.
   */
  downloadToDir(fileId: string, dir: string, options: CallOptions = {}): Promise<DownloadedFile> {
    return downloadToDir(this, fileId, dir, options);
  }

  /**
   * Pushes a file (any session's) into a sandbox at `path` through its exec channel, for a
   * sandbox with no network: streamed through the command's stdin (gzip where it pays),
   * checked by SHA-256 inside the sandbox, then renamed into place; never over an existing
   * file unless `overwrite`; `readonly` leaves it 0444. Refusals are `AirlockError`s with status
   * 0 and an `ExecErrorCode` (`target_exists`, `transfer_mismatch`, `sandbox_cannot_verify`,
   * `sandbox_cannot_write`, `exec_failed`, `exec_unavailable`; without stdin also
   * `too_large_for_base64` and `sandbox_cannot_decode`); nothing is left at `path`.
   */
  pushFile(
    exec: ExecAdapter,
    fileId: string,
    path: string,
    options: PushFileOptions = {},
  ): Promise<PushedFile> {
    return pushRelayFile(this, exec, fileId, path, options);
  }

  /**
   * Collects the file at `path` in a session's sandbox through its exec channel and stores it
   * as a file of that session (`POST /v1/sessions/:id/files`): the sandbox hashes it and
   * streams it out (gzip where it pays), the SDK checks it on the way to the relay, the relay
   * hashes it again. It can then get share links and be delivered like a file the sandbox
   * sent. Refusals: the relay's (`413 quota_exceeded`, `413 file_too_large`, `404
   * session_not_found`) and the exec ones (`ExecErrorCode`: `sandbox_file_unreadable`,
   * `transfer_mismatch`, `sandbox_cannot_verify`, `exec_failed`, `exec_unavailable`); nothing
   * is stored after a refusal.
   */
  collectFile(
    exec: ExecAdapter,
    sessionId: string,
    path: string,
    options: CollectFileOptions = {},
  ): Promise<FileRecord> {
    return collectIntoSession(this.transport, this.credential(), exec, sessionId, path, options);
  }

  override asSession(token?: string): AirlockSession {
    return new AirlockSession(this.sessionOptions(token));
  }
}

/** A sandbox session's client (see the core `AirlockSession`), plus {@link AirlockSession.downloadToFile}. */
export class AirlockSession extends CoreSession {
  constructor(options: AirlockSessionOptions) {
    super(options);
  }

  /** Streams one of the session's files to `path`, checked and renamed into place as the operator's. */
  downloadToFile(fileId: string, path: string, options: CallOptions = {}): Promise<FileRecord> {
    return downloadToFile(this, fileId, path, options);
  }

  /** Streams one of the session's files into `dir` under its cleaned name, as the operator's. */
  downloadToDir(fileId: string, dir: string, options: CallOptions = {}): Promise<DownloadedFile> {
    return downloadToDir(this, fileId, dir, options);
  }

  /** Pushes one of the session's files into a sandbox through its exec channel, as the operator's. */
  pushFile(
    exec: ExecAdapter,
    fileId: string,
    path: string,
    options: PushFileOptions = {},
  ): Promise<PushedFile> {
    return pushRelayFile(this, exec, fileId, path, options);
  }
}
