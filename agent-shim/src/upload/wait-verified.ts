import { CliError, RefusalError } from "../cli/errors.js";
import type { RelayClient } from "../transport/relay-client.js";
import type { SendResult } from "./send-result.js";

/** Longest `send --wait` waits for the relay to verify one file. */
const WAIT_LIMIT_MS = 30 * 60_000;

/**
 * Polls the file until the relay has verified it. A file the check deleted (its bytes were
 * not what was declared) fails the send with one line.
 */
export async function waitVerified(relay: RelayClient, sent: SendResult): Promise<"verified"> {
  const started = Date.now();
  for (let delay = 250; Date.now() - started < WAIT_LIMIT_MS; delay = Math.min(delay * 2, 5000)) {
    await new Promise((resolve) => setTimeout(resolve, delay));
    const file = await relay.getFile(sent.fileId).catch((err: unknown) => {
      if (err instanceof RefusalError && err.status === 404) {
        throw new CliError(
          `${sent.name} failed the relay's check (its stored bytes were not the declared ` +
            "content) and was deleted",
        );
      }
      throw err;
    });
    if (file.status !== "pending") return "verified";
  }
  throw new CliError(`${sent.name} was still being verified after 30 minutes; check it with ls`);
}
