/**
 * The one name rule, shared by the relay, the shim and the SDK: wherever a file name enters
 * (upload declares, chat attachments, operator seeds, upload links, archive entries), it is
 * passed through here. Names from people are cleaned, never refused.
 */

/** The most a file name may take on common file systems, in bytes of UTF-8. */
export const MAX_NAME_BYTES = 255;
/** A longer tail after the last dot is not treated as an extension worth keeping. */
const MAX_EXTENSION_BYTES = 32;

/**
 * C0 and C1 control characters (NUL, newlines and DEL among them), the Unicode line and paragraph
 * separators, the bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E–U+200F,
 * U+202A–U+202E, U+2066–U+2069) that can make a name read as something else, and the invisible
 * characters that can hide text from a person while an agent still reads it: zero-width space,
 * non-joiner and joiner (U+200B–U+200D), word joiner and invisible operators (U+2060–U+2064),
 * U+FEFF (byte order mark) and the Unicode tag characters (U+E0000–U+E007F). With the `u` flag,
 * so that a tag character (a surrogate pair) is matched whole.
 */
const INVISIBLE =
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u{e0000}-\u{e007f}]/gu;
const INVISIBLE_ONE = new RegExp(INVISIBLE.source, "u");

/**
 * `text` with the characters the name rule removes written out as `\uXXXX` (a tag character,
 * outside the BMP, as its two UTF-16 halves, `\udb40\udc41`, as JSON writes it): for showing a
 * name as it is (an archive's entry, a refusal's message) without letting it read as another.
 */
export function writtenOut(text: string): string {
  return text.replace(INVISIBLE, (char) => {
    let out = "";
    for (let i = 0; i < char.length; i++) {
      out += `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`;
    }
    return out;
  });
}

const encoder = new TextEncoder();
const utf8Length = (text: string): number => encoder.encode(text).length;

/** True when `name` already obeys the rule: what a client must send in a declare. */
export function isCleanFileName(name: string): boolean {
  return name !== "" && cleanFileName(name, "") === name;
}

/** The first thing wrong with `name` under the rule, for a 400's message; null when clean. */
export function fileNameProblem(name: string): string | null {
  if (name === "") return "must not be empty";
  if (/[/\\]/.test(name)) return "must not contain / or \\";
  if (INVISIBLE_ONE.test(name))
    return "must not contain control, bidi-override or invisible characters";
  if (name === "." || name === "..") return 'must not be "." or ".."';
  if (/^\.+$/.test(name)) return "must not be dots only";
  if (name.trim() !== name) return "must not start or end with white space";
  if (utf8Length(name) > MAX_NAME_BYTES) return `must be at most ${MAX_NAME_BYTES} bytes`;
  return null;
}

/**
 * A name safe to show and to create in a directory: the last path component only (`/` and
 * `\` both separate), without control characters (NUL and newlines included), bidi overrides
 * or invisible characters (zero-width, BOM, tag characters), never empty or dots only
 * (`fallback` then), at most 255 UTF-8 bytes keeping the extension. Dotfiles stay dotfiles.
 */
export function cleanFileName(name: string, fallback: string): string {
  const last =
    name
      .replace(INVISIBLE, "")
      .split(/[/\\]/)
      .map((part) => part.trim())
      .filter((part) => part !== "")
      .pop() ?? "";
  return /^\.*$/.test(last) ? fallback : numberedFileName(last, 0);
}

/**
 * `name` for 0, else `name (n)` with the number before the extension (`report (2).pdf`), cut
 * to 255 bytes by shortening the part before the extension (a cut that ends in white space
 * loses it, as a clean name must). `name` must be clean already.
 */
export function numberedFileName(name: string, n: number): string {
  const dot = name.lastIndexOf(".");
  const hasExtension = dot > 0 && utf8Length(name.slice(dot)) <= MAX_EXTENSION_BYTES;
  const stem = hasExtension ? name.slice(0, dot) : name;
  const tail = (n > 0 ? ` (${n})` : "") + (hasExtension ? name.slice(dot) : "");
  return (truncateUtf8(stem, MAX_NAME_BYTES - utf8Length(tail)) + tail).trimEnd();
}

/** The longest prefix of `text` within `maxBytes` of UTF-8, never splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (utf8Length(text) <= maxBytes) return text;
  let out = "";
  let bytes = 0;
  for (const char of text) {
    bytes += utf8Length(char);
    if (bytes > maxBytes) break;
    out += char;
  }
  return out;
}
