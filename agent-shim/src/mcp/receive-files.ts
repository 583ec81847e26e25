import { relayConfig, retryPolicy } from "../cli/config.js";
import { CliError } from "../cli/errors.js";
import { failureLine } from "../cli/output.js";
import { waitForInbox } from "../commands/inbox-wait.js";
import { pullItems, type PullResult } from "../commands/pull.js";
import { inboxDir } from "../download/inbox-dir.js";
import { RelayClient } from "../transport/relay-client.js";
import type { ToolArguments } from "./arguments.js";
import type { ToolResult } from "./server.js";

/** The variable that has `receive_files` leave each file read-only, as `pull --readonly` does. */
export const READONLY_VAR = "AIRLOCK_READONLY";

/** `AIRLOCK_READONLY` set to 1, true or yes (any case). */
export function readonlyFromEnv(env: Record<string, string | undefined> = process.env): boolean {
  return /^(1|true|yes)$/i.test(env[READONLY_VAR]?.trim() ?? "");
}

/**
 * `receive_files`: writes each new inbox file as `airlock pull` does, into the same directory
 * (`$AIRLOCK_INBOX_DIR`, else ./uploads) under the same names, read-only when `AIRLOCK_READONLY`
 * says so, and answers pull's context lines, with the files (paths included) as structured
 * content. With `wait_seconds`, waits that long for something to arrive, as `pull --wait
 * --timeout` does. A file that could not be pulled stays in the inbox; its line makes the result
 * an error.
 */
export async function receiveFilesTool(args: ToolArguments): Promise<ToolResult> {
  const wait = (args.wait_seconds as number | undefined) ?? 0;
  const dir = inboxDir(undefined);
  const policy = retryPolicy();
  const relay = new RelayClient(relayConfig(), policy);
  const items = wait > 0 ? ((await waitForInbox(relay, wait)) ?? []) : await relay.listInbox();
  const files: PullResult[] = [];
  const lines: string[] = [];
  const failures: string[] = [];
  if (items.length > 0) {
    await pullItems(relay, items, {
      dir,
      policy,
      extract: undefined,
      readonly: readonlyFromEnv(),
      pulled: (pulled, line) => {
        files.push(pulled);
        lines.push(line);
      },
      failed: (message) => failures.push(failureLine(new CliError(message))),
    });
  }
  const text = files.length + failures.length === 0 ? "nothing new in the inbox" : "";
  return {
    content: [{ type: "text", text: text || [...lines, ...failures].join("\n") }],
    structuredContent: { files },
    ...(failures.length > 0 ? { isError: true } : {}),
  };
}
