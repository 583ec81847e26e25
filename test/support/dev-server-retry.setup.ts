/**
 * The node project's `fetch` sends a request again, once, when `wrangler dev` itself answered it
 * "503 Your worker restarted mid-request" and its body can be sent again. The worker did not
 * restart: its dev proxy wrote the request on a keep-alive connection to the worker that was
 * closing, and retries only GET and HEAD (cloudflare/workers-sdk#14641). Nothing else is
 * retried: the relay's own 503s (`storage_unavailable`) carry its JSON error, not this text.
 */
const DEV_SERVER_RESTART = "Your worker restarted mid-request.";
const sendOnce = globalThis.fetch;

function replayable(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): boolean {
  if (input instanceof Request) return input.body === null;
  const body = init?.body;
  return (
    body === undefined ||
    body === null ||
    typeof body === "string" ||
    body instanceof Uint8Array ||
    body instanceof ArrayBuffer ||
    body instanceof Blob ||
    body instanceof URLSearchParams ||
    body instanceof FormData
  );
}

globalThis.fetch = async (input, init) => {
  const response = await sendOnce(input, init);
  if (response.status !== 503 || !replayable(input, init)) return response;
  const text = await response.clone().text();
  if (!text.startsWith(DEV_SERVER_RESTART)) return response;
  await response.body?.cancel();
  return sendOnce(input, init);
};
