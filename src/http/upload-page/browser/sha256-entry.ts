import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";

/**
 * What the upload page's script needs from @noble/hashes: an incremental SHA-256, since
 * WebCrypto's `digest` hashes one buffer held whole in memory. The page hashes each part with
 * WebCrypto and feeds the parts through this for the whole file's SHA-256 without holding the
 * file. Bundled into the page script by scripts/build-page-script.mjs.
 */
export interface IncrementalSha256 {
  update(bytes: Uint8Array): void;
  /** The digest of everything fed so far, in lowercase hex; call once, at the end. */
  hex(): string;
}

export function createSha256(): IncrementalSha256 {
  const hash = sha256.create();
  return {
    update: (bytes) => void hash.update(bytes),
    hex: () => bytesToHex(hash.digest()),
  };
}

/** The relay's sizes for people (the one unit rule), so that the page shows what the relay does. */
export { humanSize } from "../../../services/human-size";
