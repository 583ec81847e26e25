import { once } from "node:events";
import type { IncomingMessage } from "node:http";
import { pipeline } from "node:stream/promises";
import type { DigestStream } from "../upload/digest.js";
import type { Downloaded } from "./download.js";
import { CliError, NetworkError } from "../cli/errors.js";

/** Streams a download to stdout, verified as it goes; a lost connection is retried only before the first byte. */
export async function toStdout(
  res: IncomingMessage,
  digest: DigestStream,
  name: string,
): Promise<Downloaded> {
  let written = false;
  await pipeline(res, digest, async (chunks: AsyncIterable<Buffer>) => {
    for await (const chunk of chunks) {
      written = true;
      if (!process.stdout.write(chunk)) await once(process.stdout, "drain");
    }
  }).catch((err: unknown) => {
    if (err instanceof CliError) throw err;
    const lost = new NetworkError(err);
    // Bytes already on stdout cannot be taken back, so a retry would duplicate them.
    if (written) {
      throw new CliError(`connection lost while writing ${name} to stdout: ${lost.message}`);
    }
    throw lost;
  });
  return { path: "-", name, size: digest.bytes };
}
