import { z } from "zod";
import { claimDelivery, finishDelivery, type Delivery } from "../../db/deliveries";
import { dropHandle, findHandle, saveHandle, type HandleKey } from "../../db/platform-handles";
import type { FileRow } from "../../db/files";
import type { Session } from "../../db/sessions";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { logEvent, since } from "../../log";
import { newId } from "../../ids";
import { parseDestination, type Platform } from "../../platforms";
import { sniffMediaKind, SNIFF_BYTES, type MediaKind } from "../../platforms/media-kind";
import {
  PlatformError,
  StaleHandleError,
  type OutgoingFile,
  type SentMessage,
} from "../../platforms/platform";
import { withPlatformRetry } from "../../platforms/retry";
import { planDelivery } from "../../platforms/tiers";
import type { DeliveryRecord } from "../../wire-types";
import { humanSize } from "../human-size";
import { deliveryInProgress, deliveryLeaseUntil, holdLease } from "./lease";
import { toFileRecord } from "../file-record";
import { contentGone, openOriginal, readHead } from "../original-bytes";
import { destination } from "../validation";
import { untilJoined } from "../uploads/queued-join";

export const deliverBody = z
  .object({ to: destination, caption: z.string().max(1024).optional() })
  .strict();

export type { DeliveryRecord } from "../../wire-types";

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
    uploadedBytes: delivery.uploadedBytes,
    createdAt: new Date(delivery.createdAt).toISOString(),
  };
}

/**
 * Delivers a file to a chat bound to the session: uploaded natively when the tier table
 * allows its size and media kind (read from magic bytes), else as a link message. Content the
 * platform already holds from an earlier upload (same verified bytes, same bot or number) goes
 * by the platform's handle instead of its bytes. A delivery counts as delivered only when the
 * platform answered with a message id. Every attempt is recorded; an Idempotency-Key makes a
 * repeated request return the first one, and refuses one for another file or destination.
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

  await untilJoined(deps.store, file);
  const head = await readHead(deps.store, file, SNIFF_BYTES);
  // Never post an empty or cut file, nor a link to one.
  if (head.byteLength < Math.min(SNIFF_BYTES, file.size)) throw contentGone();
  const sniffed = await sniffMediaKind(head);
  const plan = planDelivery(deps.config.tiers, to.platform, sniffed.kind, file.size, sniffed.mime);
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
    uploadedBytes: 0,
    createdAt: deps.now(),
    finishedAt: null,
    leaseUntil: deliveryLeaseUntil(deps),
  });
  const logged = {
    deliveryId: claim.delivery.id,
    fileId: file.id,
    to: request.to,
    mode: plan.mode,
    size: file.size,
  };
  if (!claim.claimed) {
    const earlier = claim.delivery;
    if (earlier.fileId !== file.id || earlier.destination !== request.to) {
      throw new AppError(
        "idempotency_key_reused",
        `this Idempotency-Key was used for another delivery (${earlier.id}: file ` +
          `${earlier.fileId} to ${earlier.destination}); deliver with a new key`,
      );
    }
    if (earlier.status === "sending") throw deliveryInProgress(earlier);
    return toDeliveryRecord(claim.delivery);
  }

  let sent: SentMessage;
  let uploadedBytes = 0;
  const lease = holdLease(deps, claim.delivery.id);
  try {
    if (plan.mode === "native") {
      const outgoing: OutgoingFile = {
        name: file.name,
        size: file.size,
        contentType: sniffed.mime ?? file.contentType,
        kind: plan.kind,
        open: async () => {
          const body = await openOriginal(deps.store, file);
          if (!body) throw contentGone();
          return body;
        },
      };
      ({ sent, uploadedBytes } = await sendNative(deps, platform, session, file, outgoing, {
        target: to.target,
        caption: request.caption,
        kind: plan.kind,
      }));
    } else {
      const record = await toFileRecord(deps, file, origin);
      const text = linkMessage(
        platform.literal?.(file.name) ?? file.name,
        file.size,
        record.url,
        record.urlExpiresAt,
        request.caption,
      );
      sent = await withPlatformRetry(() => platform.sendText(to.target, text), deps.platformRetry);
    }
    if (!sent.messageId) throw new PlatformError(to.platform, 502, "the answer has no message id");
  } catch (error) {
    const reason =
      error instanceof PlatformError || error instanceof AppError
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
    if (error instanceof AppError) throw error;
    throw new AppError(
      error instanceof PlatformError ? "delivery_failed" : "platform_unreachable",
      reason,
    );
  } finally {
    lease.release();
  }
  await finishDelivery(
    deps.db,
    claim.delivery.id,
    { status: "delivered", method: sent.method, platformMessageId: sent.messageId, uploadedBytes },
    deps.now(),
  );
  logEvent("delivery", {
    ...logged,
    method: sent.method,
    status: "delivered",
    uploadedBytes,
    durationMs: since(started),
  });
  return toDeliveryRecord({
    ...claim.delivery,
    method: sent.method,
    status: "delivered",
    platformMessageId: sent.messageId,
    uploadedBytes,
  });
}

/**
 * Sends a file natively: by the platform's handle when it holds this content already (only for
 * verified content, whose hash is known to be its bytes), else by uploading its bytes, keeping
 * the handle the platform gives back. A handle the platform refuses is dropped and the bytes
 * go up once more, the new handle replacing it.
 */
async function sendNative(
  deps: Deps,
  platform: Platform,
  session: Session,
  file: FileRow,
  outgoing: OutgoingFile,
  how: { target: string; caption: string | undefined; kind: MediaKind },
): Promise<{ sent: SentMessage; uploadedBytes: number }> {
  const policy = platform.handles;
  const key: HandleKey | null =
    policy && file.verified
      ? {
          platform: platform.name,
          account: policy.account,
          kind: how.kind,
          sha256: file.sha256,
          scope: session.scope,
          name: policy.carriesName ? file.name : "",
        }
      : null;
  const send = (handle?: string) =>
    withPlatformRetry(
      () => platform.sendFile(how.target, handle ? { ...outgoing, handle } : outgoing, how.caption),
      deps.platformRetry,
    );
  const handle = key ? await findHandle(deps.db, key, deps.now()) : null;
  let sent: SentMessage;
  let uploadedBytes = 0;
  if (handle) {
    try {
      sent = await send(handle);
    } catch (error) {
      if (!(error instanceof StaleHandleError)) throw error;
      await dropHandle(deps.db, key!, handle);
      logEvent("platform_handle_refused", { platform: platform.name, fileId: file.id }, "warn");
      sent = await send();
      uploadedBytes = file.size;
    }
  } else {
    sent = await send();
    uploadedBytes = file.size;
  }
  if (key && sent.handle && sent.handle !== handle && sent.messageId) {
    const now = deps.now();
    const expiresAt = policy!.ttlMs === null ? null : now + policy!.ttlMs;
    await saveHandle(deps.db, key, sent.handle, now, expiresAt);
  }
  return { sent, uploadedBytes };
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
