import { refundLinkBytes, reserveLinkBytes, type LinkRow } from "../../db/links";
import type { FileRow } from "../../db/files";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { logEvent } from "../../log";

/**
 * A limit on the bytes an answer may send (a share link minted with `maxDownloads`).
 * `fileResponse` consults it after it knows an answer's length and before it reads a byte.
 */
export interface ByteBudget {
  /** Throws when nothing may be sent: answers without a body (HEAD, 304, 416) ask this. */
  check(length: number): Promise<void>;
  /** Reserves `length` bytes about to be streamed, or throws. */
  take(length: number): Promise<void>;
  /** A transfer of `length` reserved bytes ended after `sent` (the client went away). */
  endedEarly(sent: number, length: number): void;
}

/**
 * How a share link's `maxDownloads` is enforced: in bytes. A link with `maxDownloads: n`
 * may send `n × size` bytes of its file in total (an empty file counts 1 per answer), by
 * any mix of requests — whole GETs, ranges at any offset, inline previews — each
 * reserving its bytes in D1 before streaming. Downloads used = ceil(bytes sent / size).
 */
export interface LinkUsage {
  max: number;
  /** Whole downloads the link has used (a begun one counts). */
  used: number;
  /** Bytes the link may still send. */
  remaining: number;
  /** Bytes one whole download takes. */
  unit: number;
}

export function linkUsage(link: LinkRow & { maxDownloads: number }, file: FileRow): LinkUsage {
  const unit = Math.max(file.size, 1);
  const budget = link.maxDownloads * unit;
  return {
    max: link.maxDownloads,
    used: Math.min(link.maxDownloads, Math.ceil(link.bytesServed / unit)),
    remaining: Math.max(budget - link.bytesServed, 0),
    unit,
  };
}

/**
 * Of what a transfer cut short had already sent, how much may be given back over a link's
 * life: those bytes may have been lost in flight, and a resume asks for them again. Small
 * next to the file, so dropping connections on purpose buys an attacker at most this much.
 */
export function inFlightAllowance(size: number): number {
  return Math.min(4 * 1024 * 1024, Math.floor(size / 8));
}

/**
 * The budget of a capped link for one request. A `preview` (the page's text sample, an
 * `?inline=1` image, PDF, audio or video) must leave one whole download's bytes in the
 * budget, so previews never spend the download the person came for.
 */
export function linkBudget(
  deps: Deps,
  link: LinkRow & { maxDownloads: number },
  file: FileRow,
  mode: "download" | "preview",
): ByteBudget {
  const usage = linkUsage(link, file);
  const keep = mode === "preview" ? usage.unit : 0;
  const cost = (length: number) => (file.size === 0 ? 1 : length);
  const refuse = () =>
    new AppError(
      "link_exhausted",
      mode === "preview" && usage.remaining > 0
        ? "share link has no room for a preview: what is left is kept for a download"
        : undefined,
    );
  return {
    async check(length) {
      if (usage.remaining === 0) throw refuse();
      if (length > 0 && cost(length) + keep > usage.remaining) throw refuse();
    },
    async take(length) {
      if (!(await reserveLinkBytes(deps.db, link.id, usage.unit, cost(length), keep)))
        throw refuse();
    },
    endedEarly(sent, length) {
      const unsent = cost(length) - sent;
      logEvent("link_transfer_cut", { linkId: link.id, fileId: file.id, sent, length });
      deps.waitUntil(
        refundLinkBytes(deps.db, link.id, unsent, sent, inFlightAllowance(file.size)).catch(
          (error: unknown) =>
            logEvent("link_refund_failed", { linkId: link.id, error: String(error) }, "error"),
        ),
      );
    },
  };
}
