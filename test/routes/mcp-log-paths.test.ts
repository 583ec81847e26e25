import { describe, expect, it } from "vitest";
import { loggablePath } from "../../src/log";

describe("loggablePath for /mcp", () => {
  it("cuts the tokens of /mcp upload and download URLs out of logged paths", () => {
    const upload = "eyJzIjoic2VzX3gifQ.c2lnbmF0dXJlLW9mLTQzLWNoYXJhY3RlcnMtMDEyMzQ1Njc4";
    expect(loggablePath(`/mcp/uploads/${upload}`)).toBe("/mcp/uploads/<token>");
    const download = "inb_AAAAAAAAAAAAAAAAAAAAAA.1800000000.c2lnbmF0dXJl";
    expect(loggablePath(`/mcp/downloads/${download}`)).toBe("/mcp/downloads/<token>");
    expect(loggablePath("/mcp")).toBe("/mcp");
  });
});
