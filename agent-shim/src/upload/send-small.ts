import { sendInOneRequest } from "./one-request.js";
import { changedWhileSending, type Sample } from "./prepare.js";
import { toSendResult } from "./send-line.js";
import type { SendResult } from "./send-result.js";
import { sendStored, type SendContext } from "./send-stored.js";
import type { SentCacheOnDemand } from "./sent-cache.js";
import { describeInMemory, storedInTemp, type InMemory } from "./small-file.js";
import { stdinName } from "./stdin-name.js";
import { spoolStdin } from "./stdin-spool.js";

/** How every file of one `send` goes up. */
export interface SendOptions extends SendContext {
  level: number;
  sent: SentCacheOnDemand;
}

/**
 * A file of at most the one-request limit, read whole with its sample (`head.whole`), hashed
 * and gzipped (where it pays) in memory and sent in one request. Undefined when the relay has
 * no one-request route.
 */
export async function sendSmallFile(
  path: string,
  name: string,
  head: Sample & { whole: Buffer },
  options: SendOptions,
): Promise<SendResult | undefined> {
  if (head.whole.length !== head.size) throw changedWhileSending(path);
  const small = describeInMemory(head.whole, name, head, options.level);
  return sendSmallBytes(small, options);
}

/** Bytes held in memory, in one request; undefined when the relay has no one-request route. */
async function sendSmallBytes(
  small: InMemory,
  options: SendOptions,
): Promise<SendResult | undefined> {
  const sent = await sendInOneRequest(options.relay, small.declaration, small.stored);
  return sent && toSendResult(sent);
}

/** Bytes held in memory, declared and PUT from a temp file (a relay without the route). */
async function sendViaTempFile(small: InMemory, options: SendOptions): Promise<SendResult> {
  const stored = await storedInTemp(small);
  try {
    return toSendResult(await sendStored(options, { declaration: small.declaration, stored }));
  } finally {
    await stored.dispose();
  }
}

/**
 * `send -`: standard input, read as it comes. Whole in memory if it ends within the
 * one-request limit; otherwise spooled to a temp file while it is hashed and gzipped, then
 * sent as any stored bytes are (in parts above the multipart threshold). Never resumed: a
 * later run cannot read the same input again. Without `rename`, named by its sniffed type
 * (`stdin.txt`, `stdin.png`, `stdin.bin`...).
 */
export async function sendStdin(
  rename: string | undefined,
  options: SendOptions,
): Promise<SendResult> {
  const spooled = await spoolStdin(process.stdin, options.level);
  if (spooled.kind === "memory") {
    const name = rename ?? stdinName(spooled.sniffed.contentType);
    const small = describeInMemory(spooled.original, name, spooled.sniffed, options.level);
    return (await sendSmallBytes(small, options)) ?? (await sendViaTempFile(small, options));
  }
  const { size, sha256, contentType, stored } = spooled;
  const name = rename ?? stdinName(contentType);
  try {
    const { encoding, storedSize, storedSha256 } = stored;
    const declaration = { name, size, sha256, contentType, encoding, storedSize, storedSha256 };
    return toSendResult(await sendStored(options, { declaration, stored }));
  } finally {
    await stored.dispose();
  }
}
