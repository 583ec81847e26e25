import * as util from "node:util";
import { CliError, UsageError, errorCode, messageOf } from "./errors.js";

type Options = NonNullable<util.ParseArgsConfig["options"]>;

/**
 * Parses one command's arguments strictly: unknown options, missing values and stray values
 * become a usage error quoting the command's usage line.
 */
export function parseCommandArgs<const O extends Options>(
  args: string[],
  options: O,
  usage: string,
) {
  // A namespace import plus this check, because `parseArgs` arrived in Node 18.3 and a named
  // import of a missing export would crash before any message could be printed.
  if (typeof util.parseArgs !== "function") {
    throw new CliError(`Node ${process.version} is too old; airlock needs Node 18.3 or newer`);
  }
  try {
    return util.parseArgs({ args, options, strict: true, allowPositionals: true });
  } catch (err) {
    if (!errorCode(err)?.startsWith("ERR_PARSE_ARGS")) throw err;
    throw new UsageError(`${firstSentence(messageOf(err))}; usage: ${usage}`);
  }
}

// parseArgs explains at length how to pass a value starting with "-"; the first sentence is enough.
function firstSentence(message: string): string {
  const sentence = message.split(/\.\s/)[0] ?? message;
  return sentence.charAt(0).toLowerCase() + sentence.slice(1);
}
