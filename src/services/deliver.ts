import { z } from "zod";
import { claimDelivery, finishDelivery, type Delivery } from "../db/deliveries";
import type { FileRow } from "../db/files";
import type { Session } from "../db/sessions";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { logEvent, since } from "../log";
import { newId } from "../ids";
import { parseDestination } from "../platforms";
import { sniffMediaKind, SNIFF_BYTES } from "../platforms/media-kind";
import { PlatformError, type SentMessage } from "../platforms/platform";
import { withPlatformRetry } from "../platforms/retry";
import { planDelivery } from "../platforms/tiers";
import type { DeliveryRecord } from "../wire-types";
import { humanSize } from "./human-size";
import { toFileRecord } from "./file-record";
import { openOriginal, readHead } from "./original-bytes";
import { destination } from "./validation";

export const deliverBody = z
  .object({ to: destination, caption: z.string().max(1024).optional() })
  .strict();

export type { DeliveryRecord } from "../wire-types";

export function toDeliveryRecord(delivery: Delivery): DeliveryRecord {
  return {
    deliveryId: delivery.id,
    fileId: delivery.fileId,
    to: delivery.destination,
    mode: delivery.mode,
    method: delivery.method,
    status: delivery.status,
    messageId: delivery.platformMessageId,
    error: delivery.error,
    createdAt: new Date(delivery.createdAt).toISOString(),
  };
}

/**
 * Delivers a file to a chat bound to the session: uploaded natively when the tier table
 * allows its size and media kind (read from magic bytes), else as a link message. Every
 * attempt is recorded; an Idempotency-Key makes a repeated request return the first one.
 */
export async function deliverFile(
  deps: Deps,
  session: Session,
  file: FileRow,
  request: z.infer<typeof deliverBody>,
  idempotencyKey: string | undefined,
  origin: string,
): Promise<DeliveryRecord> {
  const started = Date.now();
  const to = parseDestination(request.to);
  if (!to) throw new AppError("invalid_request", "to: must be platform:id");
  if (!session.destinations.includes(request.to)) {
    throw new AppError("destination_not_allowed", `this session may not deliver to ${request.to}`);
  }
  const platform = deps.platforms[to.platform];
  if (!platform)
    throw new AppError("platform_not_configured", `${to.platform} is not configured on this relay`);

  const head = await readHead(deps.store, file, SNIFF_BYTES);
  const sniffed = await sniffMediaKind(head);
  const plan = planDelivery(deps.config.tiers, to.platform, sniffed.kind, file.size);
  const claim = await claimDelivery(deps.db, {
    id: newId("dlv"),
    sessionId: session.id,
    fileId: file.id,
    destination: request.to,
    mode: plan.mode,
    method: plan.mode === "link" ? "link" : plan.kind,
    status: "sending",
    platformMessageId: null,
    error: null,
    idempotencyKey: idempotencyKey ?? null,
    createdAt: deps.now(),
    finishedAt: null,
  });
  const logged = {
    deliveryId: claim.delivery.id,
    fileId: file.id,
    to: request.to,
    mode: plan.mode,
    size: file.size,
  };
  if (!claim.claimed) {
    if (claim.delivery.status === "sending") throw new AppError("delivery_in_progress");
    return toDeliveryRecord(claim.delivery);
  }

  let sent: SentMessage;
  try {
    if (plan.mode === "native") {
      const outgoing = {
        name: file.name,
        size: file.size,
        contentType: sniffed.mime ?? file.contentType,
        kind: plan.kind,
        open: async () => (await openOriginal(deps.store, file)) ?? new Blob([]).stream(),
      };
      sent = await withPlatformRetry(
        () => platform.sendFile(to.target, outgoing, request.caption),
        deps.platformRetry,
      );
    } else {
      const record = await toFileRecord(deps, file, origin);
      const text = linkMessage(
        file.name,
        file.size,
        record.url,
        record.urlExpiresAt,
        request.caption,
      );
      sent = await withPlatformRetry(() => platform.sendText(to.target, text), deps.platformRetry);
    }
  } catch (error) {
    const reason =
      error instanceof PlatformError
        ? error.message
        : `could not reach ${to.platform}: ${String(error)}`;
    await finishDelivery(
      deps.db,
      claim.delivery.id,
      { status: "failed", error: reason },
      deps.now(),
    );
    logEvent(
      "delivery",
      { ...logged, status: "failed", error: reason, durationMs: since(started) },
      "warn",
    );
    throw new AppError(
      error instanceof PlatformError ? "delivery_failed" : "platform_unreachable",
      reason,
    );
  }
  await finishDelivery(
    deps.db,
    claim.delivery.id,
    { status: "delivered", method: sent.method, platformMessageId: sent.messageId },
    deps.now(),
  );
  logEvent("delivery", {
    ...logged,
    method: sent.method,
    status: "delivered",
    durationMs: since(started),
  });
  return toDeliveryRecord({
    ...claim.delivery,
    method: sent.method,
    status: "delivered",
    platformMessageId: sent.messageId,
  });
}

/** The message for a file over the platform's limit: name, size, link and its expiry. */
export function linkMessage(
  name: string,
  size: number,
  url: string,
  expiresAt: string,
  caption?: string,
): string {
  const expiry = `${expiresAt.slice(0, 16).replace("T", " ")} UTC`;
  const lines = [`📎 ${name} (${humanSize(size)})`, url, `Link expires ${expiry}.`];
  return caption ? [caption, ...lines].join("\n") : lines.join("\n");
}
