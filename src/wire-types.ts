/**
 * The relay's JSON answers (docs/api.md), as the relay produces them and the shim reads
 * them. Types only and no imports, so the shim can share them without bundling any relay code.
 */

/** A stored file, with a fresh share link. */
export interface FileRecord {
  fileId: string;
  sessionId: string;
  name: string;
  size: number;
  /**
   * `pending` until the relay has checked the content (gzip and multipart uploads, read back
   * on the verify queue): `sha256` is then only what the uploader declared, and the file is
   * nobody's dedup target. A file whose check fails is deleted.
   */
  status: "pending" | "verified";
  sha256: string;
  contentType: string;
  createdAt: string;
  expiresAt: string;
  deduped: boolean;
  /**
   * Where the file came from: `sandbox` (sent by the sandbox), `seed` (the operator's seed),
   * `chat:<platform>` (an attachment a person sent in a chat), `upload-link` (a person's
   * upload through an `airlock request` link).
   */
  origin: "sandbox" | "seed" | "upload-link" | `chat:${string}`;
  url: string;
  urlExpiresAt: string;
}

/** The signed request that stores an upload's bytes: send it exactly as given. */
export interface PutInstructions {
  method: "PUT";
  url: string;
  /** Headers the client must send exactly; the URL's signature covers them. */
  headers: Record<string, string>;
}

/** One part of a multipart upload still to be stored: PUT exactly these bytes as `put` says. */
export interface PartUpload {
  /** 1-based; the part covers stored bytes [(partNumber − 1) × partSize, partNumber × partSize). */
  partNumber: number;
  put: PutInstructions;
}

/**
 * A multipart upload in progress: the parts the store does not hold yet, each with a
 * fresh signed PUT. Parts may be sent in any order and several at once; then complete.
 */
export interface MultipartAnswer {
  status: "multipart";
  uploadId: string;
  expiresAt: string;
  partSize: number;
  partCount: number;
  /** Only the parts still missing; empty when every part is stored. */
  parts: PartUpload[];
  /**
   * Only for an upload declared without its hashes: the numbers of the parts still missing
   * (`parts` is then empty; each part's URL is asked for with its SHA-256).
   */
  missing?: number[];
}

/** The answer to `POST /v1/uploads`. */
export type UploadAnswer =
  | { status: "deduped"; file: FileRecord }
  | { status: "missing" }
  | { status: "upload"; uploadId: string; expiresAt: string; put: PutInstructions }
  | MultipartAnswer;

/** The answer to `GET /v1/uploads/:id`: where an upload stands, to resume it. */
export type UploadState =
  | { status: "upload"; uploadId: string; expiresAt: string; put: PutInstructions }
  | MultipartAnswer
  | { status: "completed"; uploadId: string; file: FileRecord };

/** One delivery of a file to a chat. */
export interface DeliveryRecord {
  deliveryId: string;
  fileId: string;
  to: string;
  mode: "native" | "link";
  method: string;
  status: "sending" | "delivered" | "failed";
  messageId: string | null;
  error: string | null;
  /**
   * Bytes of the file this delivery sent to the platform: the file's size for a native upload,
   * 0 for a link message or a re-send by the platform's handle for content it already holds.
   */
  uploadedBytes: number;
  createdAt: string;
}

/** A file waiting in a sandbox's inbox. */
export interface InboxRecord {
  itemId: string;
  /** `telegram:<chatId>`, `discord:<channelId>`, `slack:<channelId>` or `operator`. */
  source: string;
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  createdAt: string;
  file: FileRecord;
}
