/** Reads a web stream as an async iterable (for clients that take iterables, like grammY). */
export async function* iterate(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** An attachment the relay will not fetch, however often it is asked: not worth a retry. */
export class AttachmentRefusedError extends Error {
  override readonly name = "AttachmentRefusedError";
}

/** Fetches `url` only when its host is on the allow-list; never follows redirects elsewhere. */
export async function fetchFromAllowedHost(
  url: string,
  allowedHosts: string[],
  init: RequestInit = {},
): Promise<{ body: ReadableStream<Uint8Array>; size: number }> {
  const parsed = new URL(url);
  if (!allowedHosts.includes(parsed.host) || !/^https?:$/.test(parsed.protocol)) {
    throw new AttachmentRefusedError(
      `refusing to fetch an attachment from ${parsed.host}: not one of the platform's hosts`,
    );
  }
  const response = await fetch(parsed, { ...init, redirect: "manual" });
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new Error(`attachment download answered ${response.status}`);
  }
  const length = Number(response.headers.get("content-length"));
  if (!Number.isSafeInteger(length) || length < 0) {
    await response.body.cancel();
    throw new Error("attachment download has no Content-Length");
  }
  return { body: response.body, size: length };
}
