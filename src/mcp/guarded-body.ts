import { AppError } from "../errors";

/** A request body on its way into the store, and why it failed if it was the body's fault. */
export interface GuardedBody {
  body: ReadableStream<Uint8Array>;
  /**
   * The refusal the body itself earned (longer or shorter than `size`, a read that failed: not
   * gzip, or the client went away), or null when it read well and the failure lies elsewhere.
   */
  fault(gzip: boolean): AppError | null;
}

/**
 * Passes `source` through, erroring as soon as it runs past `size` (when known) or ends short
 * of it, and remembers which it was: the store then sees a failed stream, and the caller tells
 * the client what was wrong with its bytes rather than answering 500.
 */
export function guardedBody(
  source: ReadableStream<Uint8Array>,
  size: number | undefined,
): GuardedBody {
  // Taken on the first read: a body refused before it is read stays unlocked, for the runtime
  // to discard.
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let seen = 0;
  let problem: { kind: "long" | "short" | "read"; detail?: string } | null = null;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        reader ??= source.getReader();
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch (error) {
          problem = { kind: "read", detail: String(error) };
          controller.error(error);
          return;
        }
        if (next.done) {
          if (size !== undefined && seen < size) {
            problem = { kind: "short" };
            controller.error(new Error(`body ended at ${seen} of ${size} bytes`));
          } else controller.close();
          return;
        }
        seen += next.value.byteLength;
        if (size !== undefined && seen > size) {
          problem = { kind: "long" };
          controller.error(new Error(`body ran past ${size} bytes`));
          await reader.cancel().catch(() => {});
          return;
        }
        controller.enqueue(next.value);
      },
      async cancel(reason) {
        await (reader ?? source).cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
  return {
    body,
    fault(gzip) {
      if (!problem) return null;
      const what = gzip ? "the inflated file" : "the body";
      if (problem.kind === "read") {
        return new AppError(
          "invalid_request",
          gzip
            ? "the body is not valid gzip (or broke off); nothing was kept"
            : "the body broke off before its end; nothing was kept",
        );
      }
      return new AppError(
        "length_mismatch",
        `${what} is ${problem.kind === "long" ? "longer" : "shorter"} than the declared ` +
          `${size} bytes; nothing was kept`,
      );
    },
  };
}
