import { readFileSync } from "node:fs";

/** The exec transport's refusals, shared with the Python SDK's tests: test/exec-cases.json. */
interface ExecCase {
  setup: string;
  code: string;
  message: string;
}

const cases = (
  JSON.parse(readFileSync(new URL("../exec-cases.json", import.meta.url), "utf8")) as {
    cases: Record<string, ExecCase>;
  }
).cases;

/** The case's code and its message with `{name}` placeholders filled from `values`. */
export function execCase(
  name: string,
  values: Record<string, string | number> = {},
): { code: string; message: string } {
  const found = cases[name];
  if (!found) throw new Error(`no exec case ${name} in test/exec-cases.json`);
  const message = found.message.replace(/\{(\w+)\}/g, (_, key: string) => {
    if (!(key in values)) throw new Error(`exec case ${name} needs {${key}}`);
    return String(values[key]);
  });
  return { code: found.code, message };
}
