import { describe, expect, it } from "vitest";
import apiDoc from "../../docs/api.md?raw";
import { codeForStatus, ERRORS } from "../../src/errors";

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

describe("a library's 4xx (Hono's HTTPException)", () => {
  it("gets the code of its status, and invalid_request for a status no code has", () => {
    expect([401, 404, 405, 413, 415, 416].map(codeForStatus)).toEqual([
      "unauthorized",
      "not_found",
      "method_not_allowed",
      "payload_too_large",
      "unsupported_media_type",
      "range_not_satisfiable",
    ]);
    expect(codeForStatus(400)).toBe("invalid_request");
    expect(codeForStatus(418)).toBe("invalid_request");
    for (const status of [401, 403, 404, 405, 411, 413, 415, 416])
      expect(ERRORS[codeForStatus(status)].status).toBe(status);
  });
});
