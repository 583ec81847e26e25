import { parseCommandArgs } from "./args.js";
import { get } from "../commands/get.js";
import { ls } from "../commands/ls.js";
import { pull } from "../commands/pull.js";
import { request } from "../commands/request.js";
import { send } from "../commands/send.js";
import { toolSchemaCommand } from "../commands/tool-schema.js";
import { UsageError } from "./errors.js";
import { HELP, USAGE } from "./help.js";
import { exitQuietlyOnClosedStdout, fail, print } from "./output.js";
import { VERSION } from "./version.js";

const COMMANDS: Record<string, (args: string[]) => Promise<void>> = {
  send,
  get,
  pull,
  ls,
  request,
  "tool-schema": toolSchemaCommand,
};

/** Dispatches `airlock <command> ...`, or answers the global flags. */
async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError(`no command given; usage: ${USAGE.global}`);
  const run = COMMANDS[command];
  if (run) return run(rest);
  if (command === "help") return print(HELP);
  if (!command.startsWith("-")) {
    throw new UsageError(`unknown command ${command}; usage: ${USAGE.global}`);
  }

  const options = {
    help: { type: "boolean", short: "h" },
    version: { type: "boolean", short: "v" },
  } as const;
  const { values, positionals } = parseCommandArgs(argv, options, USAGE.global);
  if (values.help) return print(HELP);
  if (values.version) return print(VERSION);
  throw new UsageError(`unexpected argument ${positionals[0]}; usage: ${USAGE.global}`);
}

exitQuietlyOnClosedStdout();
main(process.argv.slice(2)).catch(fail);
