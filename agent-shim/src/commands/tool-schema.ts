import { parseCommandArgs } from "../cli/args.js";
import { UsageError } from "../cli/errors.js";
import { USAGE, commandHelp } from "../cli/help.js";
import { print } from "../cli/output.js";
import { TOOL_SCHEMA_FORMATS, toolSchema, type ToolSchemaFormat } from "../cli/tool-schema.js";

const OPTIONS = {
  format: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * `airlock tool-schema [--format openai|mcp]`: prints, as one JSON document, the tool definitions
 * an agent host registers for its model. Needs no relay: a host can run it anywhere.
 */
export async function toolSchemaCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE.toolSchema);
  if (values.help) return print(commandHelp("tool-schema"));
  if (positionals.length > 0) {
    throw new UsageError(`tool-schema takes no arguments; usage: ${USAGE.toolSchema}`);
  }
  const format = values.format ?? "openai";
  if (!isFormat(format)) {
    const given = format === "" ? "needs" : `${format} is not`;
    throw new UsageError(
      `--format ${given} ${TOOL_SCHEMA_FORMATS.join(" or ")}; usage: ${USAGE.toolSchema}`,
    );
  }
  print(JSON.stringify(toolSchema(format), null, 2));
}

function isFormat(format: string): format is ToolSchemaFormat {
  return (TOOL_SCHEMA_FORMATS as readonly string[]).includes(format);
}
