/**
 * The one error type the SDK throws for anything the relay refused or could not be asked.
 */

/** What an {@link AirlockError} is made of. */
export interface AirlockErrorInit {
  /** HTTP status of the relay's answer; `0` when there was no answer (network, local checks). */
  status: number;
  /** The relay's error code (`session_revoked`, `destination_not_allowed`, …) or an SDK code. */
  code: string;
  message: string;
  /** The underlying error (a network failure, an unreadable answer). */
  cause?: unknown;
}

/**
 * A refused or failed request.
 *
 * - The relay's refusals carry its HTTP `status` and the `code` and `message` of its
 *   `{ "error": { "code", "message" } }` answer (docs/api.md lists every code).
 * - `status: 0, code: "network_error"`: the relay could not be reached; `cause` is the
 *   error `fetch` threw.
 * - `code: "invalid_response"`: the answer was not what the API promises (e.g. an HTML
 *   error page from a proxy); `status` is its HTTP status.
 * - `status: 0, code: "download_mismatch"`: downloaded bytes differ from the file record's
 *   size or SHA-256 (nothing is kept).
 *
 * An aborted call (through its `signal`) rejects with the signal's reason, not with this class.
 */
export class AirlockError extends Error {
  /** HTTP status of the relay's answer; `0` when there was none. */
  readonly status: number;
  /** Machine-readable code: the relay's, or `network_error` / `invalid_response` / `download_mismatch`. */
  readonly code: string;

  constructor(init: AirlockErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "AirlockError";
    this.status = init.status;
    this.code = init.code;
  }
}

/** The error a relay answer that is not 2xx stands for. Consumes the body. */
export async function errorFromResponse(response: Response, what: string): Promise<AirlockError> {
  let text = "";
  try {
    text = await response.text();
  } catch (cause) {
    return new AirlockError({
      status: response.status,
      code: "invalid_response",
      message: `${what}: HTTP ${response.status}, and its body could not be read`,
      cause,
    });
  }
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    const { code, message } = body.error ?? {};
    if (typeof code === "string" && typeof message === "string")
      return new AirlockError({ status: response.status, code, message });
  } catch {
    // not JSON: described below
  }
  const snippet = text.replace(/\s+/g, " ").trim().slice(0, 200);
  return new AirlockError({
    status: response.status,
    code: "invalid_response",
    message: `${what}: HTTP ${response.status}${snippet ? ` ${snippet}` : ""}`,
  });
}
