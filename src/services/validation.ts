import { z } from "zod";

/** Hex SHA-256 as the shim and the relay write it. */
export const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters");

/** A byte count: a whole number from 0 up to what JavaScript counts exactly. */
export const byteCount = z
  .number()
  .int("must be a whole number")
  .nonnegative("must not be negative")
  .max(Number.MAX_SAFE_INTEGER);

/**
 * A file name as it will appear to people and on disk: one path component, no
 * separators, no NUL or control characters, not "." or "..", at most 255 UTF-8 bytes.
 */
export const fileName = z
  .string()
  .min(1, "must not be empty")
  .refine((name) => new TextEncoder().encode(name).length <= 255, "must be at most 255 bytes")
  .refine((name) => !/[/\\]/.test(name), "must not contain / or \\")
  .refine((name) => !hasControlCharacter(name), "must not contain control characters")
  .refine((name) => name !== "." && name !== "..", 'must not be "." or ".."');

/** A MIME type such as `text/plain; charset=utf-8` (RFC 9110 §8.3.1). */
export const mediaType = z
  .string()
  .max(200)
  .regex(
    /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;\s*[\w!#$&^.+-]+=("[^"\r\n]*"|[\w!#$&^.+-]+))*$/,
    "must be a MIME type",
  );

/** `telegram:<chatId>`, `discord:<channelId>` or `slack:<channelId>`. */
export const destination = z
  .string()
  .regex(
    /^(telegram:-?\d{1,20}|discord:\d{1,25}|slack:[A-Z0-9]{1,30})$/,
    "must be telegram:<chatId>, discord:<channelId> or slack:<channelId>",
  );

/** C0 and C1 control characters, NUL and DEL included. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}
