import { parseCommandArgs } from "../cli/args.js";
import { relayConfig, retryPolicy } from "../cli/config.js";
import { UsageError } from "../cli/errors.js";
import { USAGE, commandHelp } from "../cli/help.js";
import { humanSize } from "../../../src/services/human-size.js";
import { print } from "../cli/output.js";
import { RelayClient, type FileRecord } from "../transport/relay-client.js";

const OPTIONS = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** `airlock ls [--json]`: this session's files, newest first. */
export async function ls(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE.ls);
  if (values.help) return print(commandHelp("ls"));
  if (positionals.length > 0) throw new UsageError(`ls takes no arguments; usage: ${USAGE.ls}`);
  const files = await new RelayClient(relayConfig(), retryPolicy()).listFiles();
  if (values.json) {
    for (const file of files) print(JSON.stringify(file));
    return;
  }
  for (const line of table(files)) print(line);
}

/** Aligned columns: id, size, expiry (UTC, to the minute), name last since it may hold spaces. */
function table(files: FileRecord[]): string[] {
  const rows = [
    ["ID", "SIZE", "EXPIRES", "NAME"],
    ...files.map((f) => [
      f.fileId,
      humanSize(f.size),
      f.expiresAt.slice(0, 16).replace("T", " ") + "Z",
      f.name,
    ]),
  ];
  const widths = [0, 1, 2].map((col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows.map((row) =>
    row.map((cell, col) => (col < 3 ? cell.padEnd(widths[col]!) : cell)).join("  "),
  );
}
