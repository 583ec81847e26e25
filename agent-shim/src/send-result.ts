import type { DeliveryRecord } from "../../src/wire-types.js";

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
  url: string;
  expiresAt: string;
  deduped: boolean;
  /** Bytes PUT to storage: 0 on a dedup hit, the stored (possibly gzipped) size otherwise. */
  uploadedBytes: number;
  deliveries: (DeliveryRecord | FailedDelivery)[];
  /** Present when a directory was sent, as one `<dir>.tar.gz`. */
  archive?: true;
  /** For a directory: how many regular files the archive holds. */
  files?: number;
}
