import { describe, expect, it } from "vitest";
import { sniffMediaKind } from "../../src/platforms/media-kind";
import { DEFAULT_TIERS, planDelivery } from "../../src/platforms/tiers";
import { linkMessage } from "../../src/services/delivery/deliver";
import { TINY_PNG } from "../support/bytes";

const MB = 1_000_000;

describe("planDelivery", () => {
  it.each([
    ["telegram", "photo", 10 * MB, { mode: "native", kind: "photo" }],
    ["telegram", "photo", 10 * MB + 1, { mode: "native", kind: "document" }],
    ["telegram", "video", 50 * MB, { mode: "native", kind: "video" }],
    ["telegram", "document", 50 * MB + 1, { mode: "link" }],
    ["discord", "photo", 10 * 1024 * 1024, { mode: "native", kind: "photo" }],
    ["discord", "document", 10 * 1024 * 1024 + 1, { mode: "link" }],
    ["slack", "audio", 1000 * MB, { mode: "native", kind: "audio" }],
    ["slack", "document", 1000 * MB + 1, { mode: "link" }],
  ] as const)("%s %s of %d bytes → %j", (platform, kind, size, plan) => {
    expect(planDelivery(DEFAULT_TIERS, platform, kind, size)).toEqual(plan);
  });

  it.each([
    ["image/jpeg", 5 * MB, { mode: "native", kind: "photo" }],
    ["image/png", 5 * MB + 1, { mode: "native", kind: "document" }],
    ["image/gif", 1000, { mode: "native", kind: "document" }],
    ["image/webp", 1000, { mode: "native", kind: "document" }],
    ["video/mp4", 16 * MB, { mode: "native", kind: "video" }],
    ["video/3gpp", 1000, { mode: "native", kind: "video" }],
    ["video/quicktime", 1000, { mode: "native", kind: "document" }],
    ["audio/mpeg", 16 * MB, { mode: "native", kind: "audio" }],
    ["audio/ogg", 16 * MB + 1, { mode: "native", kind: "document" }],
    ["audio/wav", 1000, { mode: "native", kind: "document" }],
    [null, 100 * MB, { mode: "native", kind: "document" }],
    ["application/pdf", 100 * MB + 1, { mode: "link" }],
  ] as const)("whatsapp %s of %d bytes → %j", (mime, size, plan) => {
    expect(planDelivery(DEFAULT_TIERS, "whatsapp", "document", size, mime)).toEqual(plan);
  });
});

/** A RIFF/WAVE header with an empty data chunk. */
function wav(): Uint8Array {
  const header = new Uint8Array(44);
  header.set(new TextEncoder().encode("RIFF"), 0);
  header.set(new TextEncoder().encode("WAVEfmt "), 8);
  header.set(new TextEncoder().encode("data"), 36);
  return header;
}

describe("sniffMediaKind", () => {
  const bytes = (...values: number[]) => new Uint8Array([...values, ...new Array(64).fill(0)]);
  it.each([
    ["a PNG", TINY_PNG, "photo", "image/png"],
    ["a JPEG", bytes(0xff, 0xd8, 0xff, 0xe0), "photo", "image/jpeg"],
    [
      "a zip, whatever its name",
      bytes(0x50, 0x4b, 0x03, 0x04, 0x14, 0x00),
      "document",
      "application/zip",
    ],
    ["plain text", new TextEncoder().encode("hello, this is text"), "document", null],
    ["a WAV", wav(), "audio", "audio/wav"],
  ])("reads %s from magic bytes", async (_, head, kind, mime) => {
    expect(await sniffMediaKind(head)).toEqual({ kind, mime });
  });
});

describe("linkMessage", () => {
  it("names the file, its size, the link and when it expires", () => {
    expect(
      linkMessage(
        "big.bin",
        123_400_000,
        "https://r/d/x",
        "2026-11-29T12:34:56.000Z",
        "Here you go",
      ),
    ).toBe("Here you go\n📎 big.bin (118 MiB)\nhttps://r/d/x\nLink expires 2026-11-29 12:34 UTC.");
  });
});
