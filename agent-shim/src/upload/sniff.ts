/** A recognisable file format: its MIME type and whether its bytes are already compressed. */
interface Format {
  type: string;
  compressed: boolean;
  matches(sample: Buffer): boolean;
}

const TEXT = "text/plain; charset=utf-8";
const BINARY = "application/octet-stream";

const at = (offset: number, signature: number[] | string) => (sample: Buffer) => {
  const bytes =
    typeof signature === "string" ? Buffer.from(signature, "latin1") : Buffer.from(signature);
  return (
    sample.length >= offset + bytes.length &&
    sample.subarray(offset, offset + bytes.length).equals(bytes)
  );
};

const isFtyp = at(4, "ftyp");
const isQuickTime = at(8, "qt  ");
const isEbml = at(0, [0x1a, 0x45, 0xdf, 0xa3]);
// The EBML header names its DocType near the start: "webm" or "matroska".
const isWebm = (s: Buffer) => isEbml(s) && s.subarray(0, 64).includes("webm", 0, "latin1");
// An MPEG audio frame header: 11 sync bits, then a layer other than "reserved" (which ADTS AAC uses).
const isMpegFrame = (s: Buffer) =>
  s.length >= 2 && s[0] === 0xff && (s[1]! & 0xe0) === 0xe0 && (s[1]! & 0x06) !== 0;

// ID3v2.2-2.4 tag, then (usually) MPEG audio.
const isId3 = (s: Buffer) => at(0, "ID3")(s) && s[3] !== undefined && s[3] >= 2 && s[3] <= 4;
// bzip2's "BZh" is followed by the block size, "1" to "9".
const isBlockSize = (byte: number | undefined) =>
  byte !== undefined && byte >= 0x31 && byte <= 0x39;

/** Formats by magic bytes; order matters where signatures share a prefix (RIFF, ftyp, EBML). */
const FORMATS: Format[] = [
  {
    type: "image/png",
    compressed: true,
    matches: at(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  },
  { type: "image/jpeg", compressed: true, matches: at(0, [0xff, 0xd8, 0xff]) },
  { type: "image/gif", compressed: true, matches: (s) => at(0, "GIF87a")(s) || at(0, "GIF89a")(s) },
  { type: "image/webp", compressed: true, matches: (s) => at(0, "RIFF")(s) && at(8, "WEBP")(s) },
  { type: "audio/wav", compressed: false, matches: (s) => at(0, "RIFF")(s) && at(8, "WAVE")(s) },
  { type: "application/pdf", compressed: false, matches: at(0, "%PDF-") },
  {
    type: "application/zip",
    compressed: true,
    matches: (s) => at(0, "PK\x03\x04")(s) || at(0, "PK\x05\x06")(s),
  },
  { type: "application/gzip", compressed: true, matches: at(0, [0x1f, 0x8b]) },
  { type: "video/quicktime", compressed: true, matches: (s) => isFtyp(s) && isQuickTime(s) },
  { type: "video/mp4", compressed: true, matches: isFtyp },
  { type: "video/webm", compressed: true, matches: isWebm },
  { type: "video/x-matroska", compressed: true, matches: isEbml },
  { type: "audio/ogg", compressed: true, matches: at(0, "OggS") },
  { type: "audio/flac", compressed: true, matches: at(0, "fLaC") },
  { type: "audio/mpeg", compressed: true, matches: (s) => isId3(s) || isMpegFrame(s) },
  { type: "application/zstd", compressed: true, matches: at(0, [0x28, 0xb5, 0x2f, 0xfd]) },
  {
    type: "application/x-xz",
    compressed: true,
    matches: at(0, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]),
  },
  {
    type: "application/x-bzip2",
    compressed: true,
    matches: (s) => at(0, "BZh")(s) && isBlockSize(s[3]),
  },
  {
    type: "application/x-7z-compressed",
    compressed: true,
    matches: at(0, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]),
  },
];

/** What the first bytes of a file say about it. */
export interface Sniffed {
  contentType: string;
  /** Already compressed by its format: gzip would only cost time. */
  compressed: boolean;
}

/**
 * Reads the MIME type from a file's first bytes (never its name). Unrecognised bytes are text
 * when they are valid UTF-8 without NUL, and `application/octet-stream` otherwise.
 * `truncated` says the sample stops before the end of the file, possibly inside a character.
 */
export function sniff(sample: Buffer, truncated: boolean): Sniffed {
  const format = FORMATS.find((f) => f.matches(sample));
  if (format) return { contentType: format.type, compressed: format.compressed };
  return { contentType: isUtf8Text(sample, truncated) ? TEXT : BINARY, compressed: false };
}

function isUtf8Text(sample: Buffer, truncated: boolean): boolean {
  if (sample.includes(0)) return false;
  try {
    // `stream: true` holds back a trailing partial character instead of calling it invalid.
    // (ignoreBOM spelled out: the relay's Workers types, which tests importing this see, require it.)
    new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(sample, {
      stream: truncated,
    });
    return true;
  } catch {
    return false;
  }
}
