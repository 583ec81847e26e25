import { resolve } from "node:path";

/** The variable a sandbox sets to say where `pull` writes when `--dir` is not given. */
export const INBOX_DIR_VAR = "AIRLOCK_INBOX_DIR";

/** Where `pull` writes when neither `--dir` nor the variable says: relative to the working directory. */
export const DEFAULT_INBOX_DIR = "uploads";

/**
 * The directory `pull` writes into, absolute: `--dir`, else `$AIRLOCK_INBOX_DIR` (an empty one
 * counts as unset), else `./uploads`. The same order in all three shims.
 */
export function inboxDir(
  option: string | undefined,
  env: Record<string, string | undefined> = process.env,
): string {
  return resolve(option ?? (env[INBOX_DIR_VAR] || DEFAULT_INBOX_DIR));
}
