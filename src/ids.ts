import { bytesToBase64Url } from "./encoding";

/** Prefixes make an id's kind obvious in logs and support requests. */
export type IdKind = "ses" | "upl" | "fil" | "dlv" | "inb" | "lnk";

/** A new unguessable id: a prefix and 128 random bits in base64url. */
export function newId(kind: IdKind): string {
  return `${kind}_${bytesToBase64Url(crypto.getRandomValues(new Uint8Array(16)))}`;
}

/** True when `id` has the shape `newId(kind)` makes. */
export function isId(kind: IdKind, id: string): boolean {
  return new RegExp(`^${kind}_[A-Za-z0-9_-]{22}$`).test(id);
}
