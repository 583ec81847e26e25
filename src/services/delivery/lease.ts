import { failStaleDeliveries, renewDeliveryLease, type Delivery } from "../../db/deliveries";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { logEvent } from "../../log";

/**
 * The reason a delivery cut off mid-send is settled with: what the sandbox reads in the
 * delivery's `error`, and why a retry with the same Idempotency-Key sends it again.
 */
export const LAPSED_DELIVERY_REASON =
  "the relay stopped while this delivery was in flight (no answer from the platform was " +
  "recorded); deliver again";

/** Until when a delivery claimed (or renewed) now holds its Idempotency-Key. */
export function deliveryLeaseUntil(deps: Deps): number {
  return deps.now() + deps.config.deliveryLeaseSeconds * 1000;
}

/**
 * Renews a delivery's lease every third of its length until released: a live attempt keeps
 * its Idempotency-Key however long the platform takes; one cut off by a crash lets it go
 * within one lease.
 */
export function holdLease(deps: Deps, deliveryId: string): { release(): void } {
  const every = Math.max(250, (deps.config.deliveryLeaseSeconds * 1000) / 3);
  const timer = setInterval(() => {
    renewDeliveryLease(deps.db, deliveryId, deliveryLeaseUntil(deps)).catch((error: unknown) =>
      logEvent("delivery_lease_renewal_failed", { deliveryId, error: String(error) }, "warn"),
    );
  }, every);
  return { release: () => clearInterval(timer) };
}

/** The answer to a retry while another attempt still holds the delivery. */
export function deliveryInProgress(earlier: Delivery): AppError {
  const until = new Date(earlier.leaseUntil ?? 0).toISOString();
  return new AppError(
    "delivery_in_progress",
    `a delivery with this Idempotency-Key is still in progress (${earlier.id}); if it was ` +
      `cut off, a retry after ${until} takes it over`,
  );
}

/** The sweep's part for deliveries: settles those whose attempt stopped renewing its lease. */
export async function failLapsedDeliveries(deps: Deps, batch: number): Promise<number> {
  const ids = await failStaleDeliveries(deps.db, deps.now(), LAPSED_DELIVERY_REASON, batch);
  for (const deliveryId of ids) {
    logEvent("delivery", { deliveryId, status: "failed", error: LAPSED_DELIVERY_REASON }, "warn");
  }
  return ids.length;
}
