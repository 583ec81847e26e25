import { describe, expect, it } from "vitest";
import { contentDisposition } from "../../src/http/content-disposition";
import { parseRange } from "../../src/http/range";

describe("parseRange", () => {
  it.each([
    [undefined, 100, undefined],
    ["bytes=0-9", 100, { offset: 0, length: 10 }],
    ["bytes=90-", 100, { offset: 90, length: 10 }],
    ["bytes=90-500", 100, { offset: 90, length: 10 }],
    ["bytes=-5", 100, { offset: 95, length: 5 }],
    ["bytes=-500", 100, { offset: 0, length: 100 }],
    ["bytes=100-", 100, "unsatisfiable"],
    ["bytes=-0", 100, "unsatisfiable"],
    ["bytes=0-", 0, "unsatisfiable"],
    ["bytes=5-1", 100, undefined],
    ["bytes=0-1,5-6", 100, undefined],
    ["items=0-1", 100, undefined],
  ] as const)("parses %s against %d bytes", (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });
});

describe("contentDisposition", () => {
  it("never lets a name break out of the header", () => {
    const header = contentDisposition('x"; filename=evil.exe; a="\\');
    expect(header).toBe(
      `attachment; filename="x_; filename=evil.exe; a=__"; filename*=UTF-8''x%22%3B%20filename%3Devil.exe%3B%20a%3D%22%5C`,
    );
  });
});
