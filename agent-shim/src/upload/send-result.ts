import type { DeliveryRecord } from "../../../src/wire-types.js";

// Types only, with no runtime imports: tests outside the shim read these shapes too.

/** A delivery the relay refused or could not be asked for, as `send --json` reports it. */
export interface FailedDelivery {
  fileId: string;
  to: string;
  status: "failed";
  error: { code: string | null; message: string };
}

/** One line of `send --json`. */
export interface SendResult {
  fileId: string;
  name: string;
  size: number;
  sha256: string;
  /** The share link: the relay's fresh one, or the one `--expires` / `--max-downloads` made. */
  url: string;
  /** When the link `url` stops working. */
  expiresAt: string;
  /** When the file itself goes (its every link with it). */
  fileExpiresAt: string;
  /**
   * `pending` while the relay still checks a large gzip or multipart upload (it is not yet a
   * dedup target; a failed check deletes it); `send --wait` waits until it is `verified`.
   */
  status: "pending" | "verified";
  deduped: boolean;
  /**
   * Stored (possibly gzipped) bytes this run PUT to storage: 0 on a dedup hit; for a resumed
   * upload only the parts sent this time; a part sent again after a failed attempt counts once.
   */
  uploadedBytes: number;
  deliveries: (DeliveryRecord | FailedDelivery)[];
  /** Present when a directory was sent, as one `<dir>.tar.gz`. */
  archive?: true;
  /** For a directory: how many regular files the archive holds. */
  files?: number;
}
