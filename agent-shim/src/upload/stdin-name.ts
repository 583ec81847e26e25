/** The extension of each type `sniff` tells, for standard input sent without `--name`. */
const EXTENSIONS: Record<string, string> = {
  "text/plain; charset=utf-8": ".txt",
  "image/png": ".png",
  "image/jpeg": ".jpg",
  "image/gif": ".gif",
  "image/webp": ".webp",
  "audio/wav": ".wav",
  "application/pdf": ".pdf",
  "application/zip": ".zip",
  "application/gzip": ".gz",
  "video/quicktime": ".mov",
  "video/mp4": ".mp4",
  "video/webm": ".webm",
  "video/x-matroska": ".mkv",
  "audio/ogg": ".ogg",
  "audio/flac": ".flac",
  "audio/mpeg": ".mp3",
  "application/zstd": ".zst",
  "application/x-xz": ".xz",
  "application/x-bzip2": ".bz2",
  "application/x-7z-compressed": ".7z",
};

/** `send -` without `--name`: `stdin` and the sniffed type's extension (`.bin` for unknown bytes). */
export function stdinName(contentType: string): string {
  return `stdin${EXTENSIONS[contentType] ?? ".bin"}`;
}
