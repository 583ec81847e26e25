import { parseCommandArgs } from "../cli/args.js";
import { relayConfig, retryPolicy } from "../cli/config.js";
import { UsageError } from "../cli/errors.js";
import { USAGE, commandHelp } from "../cli/help.js";
import { print } from "../cli/output.js";
import { RelayClient } from "../transport/relay-client.js";

const OPTIONS = {
  help: { type: "boolean", short: "h" },
} as const;

/**
 * `airlock rm <fileId>`: deletes one of the session's files and prints `deleted <fileId>`. The
 * relay answers an unknown id, or another session's, with 404: one line, exit 1.
 */
export async function rm(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE.rm);
  if (values.help) return print(commandHelp("rm"));
  const [fileId, ...extra] = positionals;
  if (fileId === undefined || fileId === "" || extra.length > 0) {
    throw new UsageError(`rm takes exactly one file id; usage: ${USAGE.rm}`);
  }
  const deleted = await new RelayClient(relayConfig(), retryPolicy()).deleteFile(fileId);
  print(`deleted ${deleted.fileId}`);
}
