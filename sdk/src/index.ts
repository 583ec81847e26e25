/**
 * Airlock operator SDK: a typed, promise-based client for an Airlock relay, for the host
 * code that runs agents in sandboxes. Runs anywhere with web `fetch` and streams: Node ≥ 18,
 * Cloudflare Workers, Deno, Bun. File-path helpers live in the Node entry, `airlock-relay-sdk/node`.
 *
 * ```ts
 * import { AirlockClient, AirlockError } from "airlock-relay-sdk";
 *
 * const airlock = new AirlockClient({ url: "https://airlock.example.com", adminToken: env.AIRLOCK_ADMIN_TOKEN });
 *
 * // One session per conversation; the sandbox gets AIRLOCK_URL and AIRLOCK_TOKEN.
 * const session = await airlock.createSession({ destinations: ["telegram:12345"], ttlSeconds: 3600 });
 * await airlock.seedInbox(session.sessionId, new TextEncoder().encode("a,b\n1,2\n"), {
 *   name: "data.csv",
 *   contentType: "text/csv",
 * });
 *
 * // … the agent runs `airlock pull`, works, `airlock send report.pdf` …
 *
 * // Only what the agent made: not the seed, chat attachments or upload-link files.
 * for (const file of await airlock.listFiles({ sessionId: session.sessionId, origin: "sandbox" })) {
 *   const response = await airlock.download(file.fileId); // streaming Response
 *   await saveSomewhere(file.name, response.body);
 * }
 *
 * // Deliveries are a sandbox's act: use the session's credential.
 * const sandbox = airlock.asSession(session.token);
 * try {
 *   await sandbox.deliver(fileId, { to: "telegram:12345", caption: "Your report" });
 * } catch (error) {
 *   if (error instanceof AirlockError && error.code === "destination_not_allowed") …
 * }
 * await airlock.revokeSession(session.sessionId);
 * ```
 *
 * @module
 */
export {
  AirlockClient,
  AirlockSession,
  type AirlockClientOptions,
  type AirlockSessionOptions,
} from "./client.js";
export type { UploadRequestState } from "./session.js";
/** Sizes for people, by the one unit rule of the relay and the shims (powers of 1024). */
export { humanSize, parseSize } from "../../src/services/human-size.js";
export { AirlockError, type AirlockErrorInit, type ExecErrorCode } from "./errors.js";
export type { CallOptions, FetchLike } from "./http.js";
export type {
  AckedItem,
  BytesInput,
  CreateSessionOptions,
  DeliverOptions,
  DeliveryRecord,
  DownloadOptions,
  FileOrigin,
  FileRecord,
  InboxRecord,
  ListFilesOptions,
  PutInstructions,
  RevokedSession,
  SeedOptions,
  SeededItem,
  SessionGrant,
  SessionListFilesOptions,
  StreamSeedOptions,
  UploadAnswer,
} from "./types.js";
