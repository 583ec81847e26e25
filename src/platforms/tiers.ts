import type { MediaKind } from "./media-kind";

/**
 * Platform upload limits in bytes, in one place because they change. A file at or under
 * its kind's limit is uploaded natively; a larger one is delivered as a link message.
 * Each value can be overridden by the matching `*_MAX_*_BYTES` setting.
 */
export interface Tiers {
  telegram: { photo: number; upload: number; download: number };
  discord: { upload: number };
  slack: { upload: number };
  whatsapp: { image: number; video: number; audio: number; document: number };
}

const MB = 1000 * 1000;
const MiB = 1024 * 1024;

export const DEFAULT_TIERS: Tiers = {
  // Bot API: 10 MB for photos, 50 MB for other uploads; bots may download only 20 MB.
  telegram: { photo: 10 * MB, upload: 50 * MB, download: 20 * MB },
  // Documented as 25 MB, later 20 MB, but enforced at 10 MiB for bots without boosts.
  discord: { upload: 10 * MiB },
  slack: { upload: 1000 * MB },
  // Cloud API media limits: images 5 MB, video and audio 16 MB, documents 100 MB.
  whatsapp: { image: 5 * MB, video: 16 * MB, audio: 16 * MB, document: 100 * MB },
};

/** The formats WhatsApp takes as image, video and audio messages; anything else goes as a document. */
const WHATSAPP_IMAGE = new Set(["image/jpeg", "image/png"]);
const WHATSAPP_VIDEO = new Set(["video/mp4", "video/3gpp"]);
const WHATSAPP_AUDIO = new Set(["audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"]);

/** The kind WhatsApp sends a file of the sniffed type as. */
export function whatsappKind(mime: string | null): MediaKind {
  if (mime && WHATSAPP_IMAGE.has(mime)) return "photo";
  if (mime && WHATSAPP_VIDEO.has(mime)) return "video";
  if (mime && WHATSAPP_AUDIO.has(mime)) return "audio";
  return "document";
}

/** How a file goes to a chat: uploaded as a given kind, or as a link message. */
export type DeliveryPlan = { mode: "native"; kind: MediaKind } | { mode: "link" };

/** Chooses native upload (and as which kind) or a link, from the tier table. */
export function planDelivery(
  tiers: Tiers,
  platform: keyof Tiers,
  kind: MediaKind,
  size: number,
  /** The sniffed MIME type, for platforms that take only some formats natively (WhatsApp). */
  mime: string | null = null,
): DeliveryPlan {
  switch (platform) {
    case "telegram": {
      const { photo, upload } = tiers.telegram;
      if (kind === "photo" && size <= photo) return { mode: "native", kind };
      // A photo too large for sendPhoto still goes natively, as a document.
      if (size <= upload) return { mode: "native", kind: kind === "photo" ? "document" : kind };
      return { mode: "link" };
    }
    case "discord":
      return size <= tiers.discord.upload ? { mode: "native", kind } : { mode: "link" };
    case "slack":
      return size <= tiers.slack.upload ? { mode: "native", kind } : { mode: "link" };
    case "whatsapp": {
      const limits = tiers.whatsapp;
      const wa = whatsappKind(mime);
      const limit = wa === "photo" ? limits.image : limits[wa];
      if (size <= limit) return { mode: "native", kind: wa };
      // Media too large for its own kind still goes natively, as a document.
      return size <= limits.document ? { mode: "native", kind: "document" } : { mode: "link" };
    }
  }
}
