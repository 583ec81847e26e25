/**
 * The exec channel into a sandbox: run an argv there with a stdin stream, read its stdout and
 * exit code. The adapters (`dockerExec`, `sshExec`, `kubectlExec`) spawn the usual CLI; any
 * other channel (a cloud sandbox's own exec API) fits by implementing {@link ExecAdapter}.
 */
import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { Readable } from "node:stream";
import { execError } from "../errors.js";

/** How a command run in the sandbox ended. */
export interface ExecExit {
  /** Its exit code (128 + the signal's number when a signal ended it). */
  code: number;
  /**
   * The end of what it wrote to stderr (at most 8 KiB): for messages, and a collect reads the
   * sandbox's SHA-256 from its last line. An adapter must keep stderr apart from stdout.
   */
  stderr: string;
}

/** A command running in the sandbox. */
export interface ExecRun {
  /** Its stdout. Read it to the end, or cancel it. */
  stdout: ReadableStream<Uint8Array>;
  /**
   * Settles once it has exited. Rejects only when it could not be run at all (`spawnCli`:
   * an `AirlockError` with code `exec_unavailable`).
   */
  exit: Promise<ExecExit>;
}

/** A way to run commands in one sandbox. */
export interface ExecAdapter {
  /** Names the sandbox in messages, e.g. `docker exec box`. */
  readonly label: string;
  /**
   * `false` for an exec API that cannot stream stdin: pushes then travel as base64 in chunks of
   * at most 64 KiB, one command each (slow; use only when there is no other way). Default `true`.
   */
  readonly stdin?: boolean;
  /**
   * Runs `argv` (argv[0] looked up on the sandbox's PATH; no shell in between unless argv
   * names one), feeding it `stdin` (or an empty stdin for `null`).
   */
  run(argv: readonly string[], stdin: ReadableStream<Uint8Array> | null): ExecRun;
  /**
   * Optional: runs `argv` with open local files as its stdin and/or stdout (file descriptors,
   * handed straight to the CLI), so that the bytes never pass through this process: a push
   * or collect of a local file then costs what the CLI alone costs. The caller opens and
   * closes the files; a stdin left out is empty, a stdout left out comes back as text (its
   * first 64 KiB).
   */
  runWithFiles?(
    argv: readonly string[],
    files: LocalFiles,
  ): Promise<ExecExit & { stdout?: string }>;
}

/** Open local files for {@link ExecAdapter.runWithFiles}. */
export interface LocalFiles {
  /** Read from its current offset to its end as the command's stdin. */
  stdin?: number;
  /** The command's stdout is written to it. */
  stdout?: number;
}

const STDERR_KEEP = 8 * 1024;
const SMALL_STDOUT = 64 * 1024;

/**
 * Runs a local CLI (`docker`, `ssh`, `kubectl`) that relays argv and stdio to the sandbox.
 * Bytes go through its stdin and stdout only, never its arguments.
 */
export function spawnCli(
  command: string,
  args: readonly string[],
  stdin: ReadableStream<Uint8Array> | null,
): ExecRun {
  const { child, exit } = spawned(command, args, ["pipe", "pipe", "pipe"]);
  const childIn = child.stdin!;
  // A command that exits before reading all of its stdin closes the pipe: its exit code says why.
  childIn.on("error", () => undefined);
  if (stdin) {
    // Node's own pipe: fewer promise hops per chunk than a web pipe into Writable.toWeb.
    const source = Readable.fromWeb(stdin as import("node:stream/web").ReadableStream<Uint8Array>);
    source.on("error", () => childIn.destroy()).pipe(childIn);
    // A command that is gone (or never ran) reads no more: cancel the source (e.g. a download).
    childIn.once("close", () => source.destroy());
  } else {
    childIn.end();
  }
  const stdout = Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>;
  return { stdout, exit };
}

/** {@link spawnCli} with local files as the CLI's stdin and stdout (see `runWithFiles`). */
export async function spawnCliWithFiles(
  command: string,
  args: readonly string[],
  files: LocalFiles,
): Promise<ExecExit & { stdout?: string }> {
  const { child, exit } = spawned(command, args, [
    files.stdin ?? "ignore",
    files.stdout ?? "pipe",
    "pipe",
  ]);
  if (files.stdout !== undefined) return exit;
  let stdout = "";
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (text: string) => {
    if (stdout.length < SMALL_STDOUT) stdout += text;
  });
  return { ...(await exit), stdout };
}

function spawned(
  command: string,
  args: readonly string[],
  stdio: StdioOptions,
): { child: ChildProcess; exit: Promise<ExecExit> } {
  const child = spawn(command, args, { stdio });
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (text: string) => {
    stderr = (stderr + text).slice(-STDERR_KEEP);
  });
  const exit = new Promise<ExecExit>((resolve, reject) => {
    child.once("error", (error) =>
      reject(execError("exec_unavailable", `could not run ${command}: ${error.message}`, error)),
    );
    child.once("close", (code, signal) => {
      const signalled = signal ? 128 + (signalNumber(signal) ?? 0) : 1;
      resolve({ code: code ?? signalled, stderr });
    });
  });
  exit.catch(() => undefined);
  return { child, exit };
}

function signalNumber(signal: NodeJS.Signals): number | undefined {
  const numbers: Partial<Record<NodeJS.Signals, number>> = {
    SIGHUP: 1,
    SIGINT: 2,
    SIGKILL: 9,
    SIGPIPE: 13,
    SIGTERM: 15,
  };
  return numbers[signal];
}

/** The last non-empty line of a command's stderr, for a message. */
export function lastLine(text: string): string {
  const lines = text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  return lines.at(-1) ?? "";
}
