/**
 * The shim's error vocabulary. Every failure ends as one `airlock: <message>` line, so each
 * error here carries a message that already names what failed.
 */

/** A failure reported as one line with a chosen exit code (1 runtime, 2 usage). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** A mistake in how airlock was invoked or configured: exit 2. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 2);
    this.name = "UsageError";
  }
}

/** A server's final answer refusing a request: its status, and the error body's code if any. */
export class RefusalError extends CliError {
  constructor(
    message: string,
    readonly status: number,
    /** The refusal in one phrase: `code: message` from the body, or the bare status. */
    readonly detail: string,
    /** The error body's code and message, when it has them. */
    readonly body: { code?: string; message?: string },
  ) {
    super(message);
    this.name = "RefusalError";
  }
}

/**
 * A service that stayed unreachable or failing through every retry: whatever else it would be
 * asked now is unlikely to fare better.
 */
export class UnavailableError extends CliError {
  constructor(message: string) {
    super(message);
    this.name = "UnavailableError";
  }
}

/** The connection to a server failed before a complete answer arrived. */
export class NetworkError extends Error {
  readonly code: string | undefined;

  constructor(cause: unknown) {
    const code = errorCode(cause);
    super(networkReason(code, cause));
    this.name = "NetworkError";
    this.code = code;
  }
}

/** A server answered with a status worth retrying (429 or 5xx). */
export class RetryableStatusError extends Error {
  constructor(
    readonly status: number,
    detail: string,
    readonly retryAfterMs: number | undefined,
  ) {
    super(detail);
    this.name = "RetryableStatusError";
  }
}

const FS_REASONS: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOTDIR: "not a directory",
  EISDIR: "is a directory",
  ELOOP: "too many levels of symbolic links",
  ENAMETOOLONG: "file name too long",
  EMFILE: "too many open files",
  ENOSPC: "no space left on device",
  EROFS: "read-only file system",
  EEXIST: "file already exists",
  EIO: "input/output error",
};

const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ETIMEDOUT: "timed out",
  EPIPE: "connection closed while sending",
  EAI_AGAIN: "temporary DNS failure",
  ENOTFOUND: "host not found",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
};

/** `cannot <verb> <path>: <reason>` for a failed file-system call. */
export function fsError(verb: string, path: string, err: unknown): CliError {
  const code = errorCode(err);
  const reason = (code && FS_REASONS[code]) ?? messageOf(err);
  return new CliError(`cannot ${verb} ${path}: ${reason}`);
}

/** The `code` of a Node.js system error; Node 20's happy-eyeballs wraps them in an AggregateError. */
export function errorCode(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const { code, errors } = err as { code?: unknown; errors?: unknown };
  if (typeof code === "string") return code;
  return Array.isArray(errors) ? errorCode(errors[0]) : undefined;
}

/** A short, human reason for an error of any shape. */
export function messageOf(err: unknown): string {
  if (err instanceof Error && err.message) return err.message;
  return String(err);
}

function networkReason(code: string | undefined, cause: unknown): string {
  const message = messageOf(cause);
  if (message === "socket hang up") return message;
  if (code && NETWORK_REASONS[code]) return NETWORK_REASONS[code];
  return code && !message.includes(code) ? `${message} (${code})` : message;
}
