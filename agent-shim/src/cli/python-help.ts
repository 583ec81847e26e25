import { NAMES, USAGE, commandHelp, wholeHelp, type CommandName } from "./help.js";

/**
 * The Python shim's usage lines and help pages, rendered from this shim's (help.ts, the one
 * source) by scripts/build-shim.mjs into the generated help block of agent-shim/python/01-help.py.
 * The Python shim has every command but tool-schema, and prints ASCII only.
 */

type PythonCommand = Exclude<CommandName, "tool-schema">;

const PYTHON_NAMES = NAMES.filter((name): name is PythonCommand => name !== "tool-schema");

const ASIDE = "(the Python shim: the Node shim's commands but tool-schema)";

/** The help text's only characters outside ASCII, and what the Python shim prints for each. */
const ASCII_FORMS: Record<string, string> = { "×": "x", "…": "..." };

function ascii(text: string): string {
  const out = text.replace(/[×…]/g, (c) => ASCII_FORMS[c] ?? c);
  const other = /[^\x00-\x7f]/.exec(out);
  if (other !== null) {
    const code = other[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    throw new Error(
      `help text holds U+${code} (${other[0]}): give it an ASCII form in ASCII_FORMS`,
    );
  }
  return out;
}

export interface PythonHelp {
  /** USAGE: one usage line per command, and `global`. */
  usage: Record<string, string>;
  /** PAGES: each command's whole `--help` page. */
  pages: Record<string, string>;
  /** HELP: the whole `airlock --help`. */
  help: string;
}

export function pythonHelp(): PythonHelp {
  const global = USAGE.global.replace("|tool-schema", "");
  if (global === USAGE.global) throw new Error("USAGE.global no longer lists tool-schema");
  const usage: Record<string, string> = {};
  const pages: Record<string, string> = {};
  for (const name of PYTHON_NAMES) {
    usage[name] = ascii(USAGE[name]);
    pages[name] = ascii(commandHelp(name));
  }
  usage.global = ascii(global);
  return { usage, pages, help: ascii(wholeHelp(PYTHON_NAMES, ASIDE)) };
}
