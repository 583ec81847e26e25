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
    const header = contentDisposition('x"; filename=evil.exe;\r\nSet-Cookie: a="1');
    expect(header).toBe(
      `attachment; filename="x_; filename=evil.exe;Set-Cookie: a=_1"; filename*=UTF-8''x%22%3B%20filename%3Devil.exe%3BSet-Cookie%3A%20a%3D%221`,
    );
  });

  it("applies the name rule to names stored before it: a basename of at most 255 bytes", () => {
    const header = contentDisposition(`dir/../${"✓".repeat(5000)}.txt`, "inline");
    const name = decodeURIComponent(/filename\*=UTF-8''(.*)$/.exec(header)![1]!);
    expect(name).toBe(`${"✓".repeat(83)}.txt`);
    expect(new TextEncoder().encode(name).byteLength).toBeLessThanOrEqual(255);
    expect(header.length).toBeLessThan(2048);
    expect(header.startsWith(`inline; filename="${"_".repeat(83)}.txt"`)).toBe(true);
    expect(contentDisposition("../..")).toBe(
      `attachment; filename="download"; filename*=UTF-8''download`,
    );
  });
});
