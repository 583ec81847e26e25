import { parseCommandArgs } from "./args.js";
import { get } from "../commands/get.js";
import { link } from "../commands/link.js";
import { ls } from "../commands/ls.js";
import { mcp } from "../commands/mcp.js";
import { pull } from "../commands/pull.js";
import { request } from "../commands/request.js";
import { rm } from "../commands/rm.js";
import { send } from "../commands/send.js";
import { toolSchemaCommand } from "../commands/tool-schema.js";
import { UsageError } from "./errors.js";
import { HELP, USAGE, commandHelp, type CommandName } from "./help.js";
import { exitQuietlyOnClosedStdout, fail, print } from "./output.js";
import { VERSION } from "./version.js";

const COMMANDS: Record<CommandName, (args: string[]) => Promise<void>> = {
  send,
  get,
  pull,
  request,
  link,
  rm,
  ls,
  "tool-schema": toolSchemaCommand,
  mcp,
};

/** Dispatches `airlock <command> ...`, or answers the global flags. */
async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError(`no command given; usage: ${USAGE.global}`);
  if (isCommand(command)) {
    if (asksForHelp(rest)) return print(commandHelp(command));
    return COMMANDS[command](rest);
  }
  if (command === "help") {
    const [topic] = rest;
    return print(topic !== undefined && isCommand(topic) ? commandHelp(topic) : HELP);
  }
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

function isCommand(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name);
}

/**
 * `-h` or `--help` among a command's options (not after `--`, where it would be a path): the
 * command's own help, whatever else is on the line, as its own parser would answer too.
 */
function asksForHelp(args: string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === "--help" || arg === "-h");
}

exitQuietlyOnClosedStdout();
main(process.argv.slice(2)).catch(fail);
