import type { Deps } from "../../deps";
import { logEvent } from "../../log";
import type { VerifyJob } from "../../verify-job";
import { runVerifyJob } from "./verify-upload";

/** Seconds before the queue delivers a failed message again: 5, 10, 20, 40, … up to 10 min. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(5 * 2 ** Math.max(0, attempts - 1), 600);
}

/**
 * The verify queue's consumer. Each message is checked on its own, all of a batch at once (a
 * join of parts that a reader waits for never queues behind a GiB being read back): one the
 * store could not read is retried with backoff (after `max_retries` it goes to the dead-letter
 * queue, and the hourly sweep re-sends files still pending), the others are acknowledged.
 */
export async function consumeVerifyBatch(
  deps: Deps,
  batch: Pick<MessageBatch<VerifyJob>, "messages">,
): Promise<void> {
  await Promise.all(batch.messages.map((message) => consumeOne(deps, message)));
}

async function consumeOne(deps: Deps, message: Message<VerifyJob>): Promise<void> {
  const started = Date.now();
  try {
    const outcome = await runVerifyJob(deps, message.body);
    logEvent("verify_job", {
      ...message.body,
      outcome,
      attempts: message.attempts,
      durationMs: Date.now() - started,
    });
    message.ack();
  } catch (error) {
    const delaySeconds = retryDelaySeconds(message.attempts);
    logEvent(
      "verify_job_retry",
      { ...message.body, attempts: message.attempts, delaySeconds, error: String(error) },
      "warn",
    );
    message.retry({ delaySeconds });
  }
}
