import { describe, expect, it } from "vitest";
import apiDoc from "../../docs/api.md?raw";
import { ERRORS } from "../../src/errors";

/** The rows of docs/api.md's "Error codes" table: code, status, default message. */
function documentedCodes(markdown: string): string[][] {
  const section = markdown.split(/^## Error codes$/m)[1]?.split(/^## /m)[0] ?? "";
  return section
    .split("\n")
    .filter((line) => /^\| `/.test(line))
    .map((line) =>
      line
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim().replace(/^`|`$/g, "")),
    );
}

describe("docs/api.md's error codes", () => {
  it("are every code the relay answers with, with its status and default message", () => {
    const inCode = Object.entries(ERRORS).map(([code, { status, message }]) => [
      code,
      String(status),
      message,
    ]);
    expect(documentedCodes(apiDoc)).toEqual(inCode);
  });
});
