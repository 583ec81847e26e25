/** The shapes of the relay calls the shim makes that are not in the relay's wire types. */
import type { InboxRecord } from "../../../src/wire-types.js";

/** `POST /v1/uploads`: the original fields alone probe for a dedup hit; all of them ask to upload. */
export interface UploadDeclaration {
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  encoding?: "identity" | "gzip";
  storedSize?: number;
  storedSha256?: string;
  /** The SHA-256 of each part of the stored bytes: asks for a multipart upload. */
  partSha256?: string[];
  /** gzip stored as independent members: the original bytes per member, each one's stored size. */
  members?: { span: number; storedSizes: number[] };
}

/** `POST /v1/uploads` of a file sent from its first byte: its hashes come later (docs/api.md). */
export interface HashAtCompleteDeclaration {
  name: string;
  size: number;
  contentType: string;
  encoding: "identity" | "gzip";
  hashAtComplete: true;
  /** The first parts' digests, when known: the answer then carries their signed PUTs. */
  parts?: { partNumber: number; sha256: string }[];
}

/** `complete` of gzip declared with `hashAtComplete`: the hashes, stored size and member table. */
export interface CompletedGzip {
  sha256: string;
  storedSize: number;
  storedSha256: string;
  members?: { span: number; storedSizes: number[] };
}

/** `POST /v1/requests`: what an upload link takes. */
export interface UploadRequestBody {
  name?: string;
  maxBytes?: number;
  ttlSeconds?: number;
}

/** The relay's answer to `POST /v1/requests`. */
export interface UploadRequestRecord {
  requestId: string;
  url: string;
  name: string | null;
  maxBytes: number;
  expiresAt: string;
}

/** An inbox entry; a top-level `fileId` is accepted too, though the documented place is `file`. */
export type InboxItem = InboxRecord & { fileId?: string };

/** `POST /v1/files/:id/links`: the link's lifetime in seconds and its download limit. */
export interface LinkOptions {
  ttlSeconds?: number;
  maxDownloads?: number;
}

/** A share link minted on its own: `maxDownloads` is null when unlimited. */
export interface ShareLink {
  url: string;
  expiresAt: string;
  maxDownloads: number | null;
}

/** The answer to `DELETE /v1/files/:id`. */
export interface DeletedFile {
  fileId: string;
  deletedAt: string;
}

/** A request for a file's bytes, ready for `download`. */
export interface ContentRequest {
  url: string;
  headers: Record<string, string>;
}
