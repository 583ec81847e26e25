import type { IncomingMessage } from "node:http";
import type { DownloadSource } from "./download.js";
import { getFollowing } from "./download-redirect.js";
import type { Piece } from "./parallel-pieces.js";

/** GETs the bytes `piece` is missing, with `If-Range` naming the file's SHA-256. */
export function rangeRequest(
  source: DownloadSource,
  sha256: string,
  piece: Piece,
): Promise<IncomingMessage> {
  const range = `bytes=${piece.start + piece.got}-${piece.end - 1}`;
  const headers = { ...source.headers, range, "if-range": `"${sha256}"` };
  return getFollowing(source.url, headers, true);
}

/**
 * The request for the range one stream takes next, sent while it still reads the one before:
 * the next range's round trips (on s3 two, the relay's redirect and the store) overlap the
 * transfer instead of following it. Its body waits, held back by TCP, until it is taken.
 */
export class NextRange {
  private pending: { piece: Piece; res: Promise<IncomingMessage> } | undefined;

  constructor(
    private readonly source: DownloadSource,
    private readonly sha256: string,
  ) {}

  /** Sends the request for `piece` now (once). */
  send(piece: Piece): void {
    if (this.pending !== undefined) return;
    const res = rangeRequest(this.source, this.sha256, piece);
    res.catch(() => undefined); // Its failure is met when it is taken (and retried there).
    this.pending = { piece, res };
  }

  /** The request sent for `piece`, once; undefined when none was (ask for it then). */
  take(piece: Piece): Promise<IncomingMessage> | undefined {
    if (this.pending?.piece !== piece) return undefined;
    const { res } = this.pending;
    this.pending = undefined;
    return res;
  }

  /** Drops a request never taken (the download failed first). */
  drop(): void {
    void this.pending?.res.then(
      (res) => res.destroy(),
      () => undefined,
    );
    this.pending = undefined;
  }
}
