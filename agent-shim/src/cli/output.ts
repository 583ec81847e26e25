import { CliError, messageOf } from "./errors.js";

/** The longest message `fail` prints; relay messages are echoed and must not flood a terminal. */
const MAX_LINE = 1000;

/** Writes one line to stdout: the shim's result (a URL, a path, a JSON object). */
export function print(line: string): void {
  process.stdout.write(line + "\n");
}

/** Writes one line to stderr: information that must not mix with results on stdout. */
export function note(line: string): void {
  process.stderr.write(line + "\n");
}

/**
 * Reports a failure that does not stop the command (one delivery, one pulled file) as one
 * `airlock: ` line on stderr, like `fail` does for the failure that ends it.
 */
export function warn(message: string): void {
  // A progress bar may be on the current line of a terminal.
  const clear = process.stderr.isTTY ? "\r\x1b[2K" : "";
  process.stderr.write(`${clear}airlock: ${oneLine(message)}\n`);
}

/**
 * Reports `err` as exactly one `airlock: ` line on stderr and exits: 2 for usage errors, 1 for
 * everything else. Never a stack trace, unless `AIRLOCK_DEBUG` asks for one.
 */
export function fail(err: unknown): never {
  const known = err instanceof CliError;
  warn(known ? err.message : `unexpected error: ${messageOf(err)}`);
  if (process.env.AIRLOCK_DEBUG && err instanceof Error && err.stack) {
    process.stderr.write(err.stack + "\n");
  }
  process.exit(known ? err.exitCode : 1);
}

/** The one `airlock: ` line `fail` prints for `err`, for a tool result to carry. */
export function failureLine(err: unknown): string {
  const message = err instanceof CliError ? err.message : `unexpected error: ${messageOf(err)}`;
  return `airlock: ${oneLine(message)}`;
}

/** Keeps a stdout reader that went away (`airlock ls | head -1`) from surfacing as an error. */
export function exitQuietlyOnClosedStdout(): void {
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(0);
    fail(err);
  });
}

function oneLine(text: string): string {
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return flat.length > MAX_LINE ? flat.slice(0, MAX_LINE - 1) + "…" : flat;
}
