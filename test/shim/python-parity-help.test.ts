// The Python shim's help, held to the Node shim's.
import { describe, expect, it } from "vitest";
import { USAGE } from "../../agent-shim/src/cli/help";
import { failureLine } from "./run-shim";
import { node, python, run, session, useParitySuite } from "./python-parity-support";

useParitySuite("airlock-python-parity-");

describe("the Python shim's help", () => {
  it("lists every usage line of the Node shim but tool-schema's", async () => {
    const at = await session();
    const help = await run(python, ["--help"], at);
    expect(help.code).toBe(0);
    const { toolSchema, global, ...commands } = USAGE;
    for (const usage of Object.values(commands)) expect(help.stdout).toContain(`  ${usage}\n`);
    expect(help.stdout).not.toContain(toolSchema);
    const none = await run(python, [], at);
    expect(failureLine(none)).toBe(
      `airlock: no command given; usage: ${global.replace("|tool-schema", "")}`,
    );
  });

  it("prints the Node shim's pages, in ASCII: each command's, and the whole one but tool-schema's parts", async () => {
    const at = await session();
    const ascii = (text: string) => text.replaceAll("×", "x").replaceAll("…", "...");
    const { toolSchema } = USAGE;
    const names = Object.keys(USAGE).filter((name) => name !== "toolSchema" && name !== "global");
    for (const name of names) {
      const fromNode = await run(node, [name, "--help"], at);
      const fromPython = await run(python, [name, "--help"], at);
      expect(fromPython.code).toBe(0);
      expect(fromPython.stdout).toBe(ascii(fromNode.stdout));
      expect((await run(python, ["help", name], at)).stdout).toBe(fromPython.stdout);
    }
    const whole = ascii((await run(node, ["--help"], at)).stdout)
      .replace(`  ${toolSchema}\n`, "")
      .replace(/\n {2}tool-schema\n(?: {10}.*\n)*/, "\n")
      .replace(/Options of tool-schema\n(?: .*\n)*\n/, "")
      .replace("\n", "\n(the Python shim: the Node shim's commands but tool-schema)\n");
    expect((await run(python, ["--help"], at)).stdout).toBe(whole);
  });
});
