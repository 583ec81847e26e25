import { bytesToBase64Url } from "./encoding";

/**
 * Prefixes make an id's kind obvious in logs and support requests. `req` is an upload link's
 * request; `put` is a plain PUT's claim on an upload link (it has no row of its own).
 */
export type IdKind = "ses" | "upl" | "fil" | "dlv" | "inb" | "lnk" | "req" | "put";

/** A new unguessable id: a prefix and 128 random bits in base64url. */
export function newId(kind: IdKind): string {
  return `${kind}_${bytesToBase64Url(crypto.getRandomValues(new Uint8Array(16)))}`;
}

/** True when `id` has the shape `newId(kind)` makes. */
export function isId(kind: IdKind, id: string): boolean {
  return new RegExp(`^${kind}_[A-Za-z0-9_-]{22}$`).test(id);
}
