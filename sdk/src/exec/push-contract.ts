/** What a push into a sandbox takes, what it gives, and how a refused one is worded. */
import type { AirlockError, ExecErrorCode } from "../errors.js";
import type { ExecAdapter } from "./exec.js";
import { execFailure } from "./probe.js";
import { EXIT } from "./sandbox-scripts.js";

/** Options for a push into a sandbox. */
export interface PushOptions {
  /** Leave the file read-only (mode 0444), e.g. configuration the agent must not change. */
  readonly?: boolean;
  /** Replace a file already at the path. Default: refuse (`target_exists`), leaving it as it was. */
  overwrite?: boolean;
  /**
   * `auto` (default): gzip when the first 64 KiB shrink by 10 % or more, the sandbox can
   * inflate (`gzip`, `python3` or `node`), and this adapter's earlier pushes have not shown
   * plain bytes to go faster (a local `docker exec` pipe, a fast link: there gzip only costs
   * time); `never`; `always` (when the sandbox can inflate).
   */
  compress?: "auto" | "always" | "never";
  /**
   * For an exec API without stdin only: the largest file the base64 fallback moves (one
   * command per 48 KiB of it); a larger one is refused (`too_large_for_base64`) before any
   * command runs. Default 16 MiB (342 commands).
   */
  maxBase64Bytes?: number;
}

/** What a push did. */
export interface PushResult {
  /** The path written in the sandbox, as given. */
  path: string;
  size: number;
  sha256: string;
  /** How the bytes travelled. */
  transfer: "identity" | "gzip" | "base64-chunks";
}

/** What `pushStream` must know of the bytes. */
export interface PushSource extends PushOptions {
  /** Their SHA-256 (lowercase hex): checked inside the sandbox before the file is placed. */
  sha256: string;
  /** Their exact size: checked on disk inside the sandbox too. */
  size: number;
}

const PUSH_EXIT_CODES: Record<number, ExecErrorCode> = {
  [EXIT.exists]: "target_exists",
  [EXIT.mismatch]: "transfer_mismatch",
  [EXIT.noDirectory]: "sandbox_cannot_write",
  [EXIT.cannotCreate]: "sandbox_cannot_write",
  [EXIT.cannotPlace]: "sandbox_cannot_write",
};

/** A push command's failure, worded by its exit code. */
export function pushFailure(
  exec: ExecAdapter,
  path: string,
  exit: { code: number; stderr: string },
): AirlockError {
  return execFailure(exec, `push to ${path}`, exit, PUSH_EXIT_CODES[exit.code] ?? "exec_failed");
}
