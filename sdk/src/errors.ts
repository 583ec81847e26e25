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
 * - `status: 0` with an {@link ExecErrorCode}: the exec transport (`pushFile`, `collectFile`)
 *   refused or failed; nothing was placed in the sandbox or stored at the relay.
 *
 * An aborted call (through its `signal`) rejects with the signal's reason, not with this class.
 */
export class AirlockError extends Error {
  /** HTTP status of the relay's answer; `0` when there was none. */
  readonly status: number;
  /**
   * Machine-readable code: the relay's, `network_error` / `invalid_response` /
   * `download_mismatch`, or an {@link ExecErrorCode}.
   */
  readonly code: string;

  constructor(init: AirlockErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "AirlockError";
    this.status = init.status;
    this.code = init.code;
  }
}

/**
 * Why a move of bytes through a sandbox's exec channel was refused. The message names the
 * sandbox (the adapter's label) and the path, and ends with what the sandbox said.
 */
export type ExecErrorCode =
  /** The adapter's CLI (`docker`, `ssh`, `kubectl`) could not be started on this host. */
  | "exec_unavailable"
  /**
   * A command in the sandbox (or the CLI, e.g. ssh unable to connect) exited non-zero: the
   * message ends with the last line of its stderr, or its exit code when it said nothing.
   */
  | "exec_failed"
  /** The sandbox has none of `sha256sum`, `openssl`, `python3`, `node` to check a SHA-256. */
  | "sandbox_cannot_verify"
  /** An exec API without stdin, and the sandbox has nothing to decode base64 with. */
  | "sandbox_cannot_decode"
  /** An exec API without stdin, and the file is larger than the base64 fallback moves. */
  | "too_large_for_base64"
  /** Collect: no regular, readable file at the path in the sandbox. */
  | "sandbox_file_unreadable"
  /** Push: the directory is missing, or the temp file could not be made, moded or renamed. */
  | "sandbox_cannot_write"
  /** Push: a file is at the path and `overwrite` was not asked for. Left as it was. */
  | "target_exists"
  /** The bytes did not arrive intact (size or SHA-256 differ); nothing was kept. */
  | "transfer_mismatch";

/** An exec transport refusal: `status: 0` (no relay answer is involved). */
export function execError(code: ExecErrorCode, message: string, cause?: unknown): AirlockError {
  return new AirlockError({ status: 0, code, message, cause });
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
