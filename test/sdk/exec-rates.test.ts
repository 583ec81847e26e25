import { describe, expect, it } from "vitest";
import type { ExecAdapter } from "../../sdk/src/exec/exec";
import { gzipMayPay, recordRate } from "../../sdk/src/exec/rates";

const MiB = 1024 * 1024;
const adapter = (): ExecAdapter => ({
  label: "box",
  run: () => {
    throw new Error("not run");
  },
});

describe("whether gzip pays on an exec channel", () => {
  it("tries gzip until plain bytes have been timed", () => {
    expect(gzipMayPay(adapter(), "push")).toBe(true);
    expect(gzipMayPay(adapter(), "collect")).toBe(true);
  });

  it("sends plain bytes on a channel faster than gzip's 60 MB/s, slower ones gzipped", () => {
    const fast = adapter();
    recordRate(fast, "push", "identity", 16 * MiB, 100); // 168 MB/s
    expect(gzipMayPay(fast, "push")).toBe(false);
    expect(gzipMayPay(fast, "collect")).toBe(true); // each direction learns on its own
    const slow = adapter();
    recordRate(slow, "collect", "identity", 16 * MiB, 1000); // 17 MB/s
    expect(gzipMayPay(slow, "collect")).toBe(true);
  });

  it("picks the faster encoding once both have been timed, by their best runs", () => {
    const exec = adapter();
    recordRate(exec, "collect", "identity", 16 * MiB, 1000); // 17 MB/s
    recordRate(exec, "collect", "gzip", 16 * MiB, 2000); // 8 MB/s: gzip costs more than it saves
    expect(gzipMayPay(exec, "collect")).toBe(false);
    recordRate(exec, "collect", "gzip", 16 * MiB, 500); // 34 MB/s
    expect(gzipMayPay(exec, "collect")).toBe(true);
    recordRate(exec, "collect", "identity", 16 * MiB, 5000); // a slow run under load: ignored
    expect(gzipMayPay(exec, "collect")).toBe(true);
    recordRate(exec, "collect", "identity", 16 * MiB, 400); // 42 MB/s
    expect(gzipMayPay(exec, "collect")).toBe(false);
  });

  it("learns nothing from small files, whose time is mostly the command's start", () => {
    const exec = adapter();
    recordRate(exec, "push", "identity", 512 * 1024, 1);
    expect(gzipMayPay(exec, "push")).toBe(true);
  });
});
