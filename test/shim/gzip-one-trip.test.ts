// The Node shim's member gzip on libuv's pool (issue 29 §2): output room sized from the last
// member, so that a member takes one trip to the pool; a member larger than its room must still
// come back whole.
import { randomBytes } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { OneTripGzip, memberBound } from "../../agent-shim/src/upload/gzip-one-trip";
import { youngGc } from "../../agent-shim/src/upload/young-gc";
import { MiB, sha256 } from "./gzip-member-checks";
import { logText } from "./shim-inputs";

describe("OneTripGzip", () => {
  it("gzips text, then random bytes far past the room text left, then nothing: each member whole", async () => {
    const gzip = new OneTripGzip(1);
    const spans = [logText(MiB), logText(MiB), randomBytes(MiB), Buffer.alloc(0), logText(MiB)];
    const members: Buffer[] = [];
    for (const span of spans) members.push(await gzip.gzip(span)); // one at a time: rooms learnt
    for (const [i, member] of members.entries()) {
      expect(member.length).toBeLessThanOrEqual(memberBound(spans[i]!.length));
      expect(sha256(gunzipSync(member))).toBe(sha256(spans[i]!));
    }
    // Text packs well (the room after it is small); random bytes do not, and still came whole.
    expect(members[0]!.length).toBeLessThan(MiB / 3);
    expect(members[2]!.length).toBeGreaterThan(MiB);
    youngGc();
    youngGc();
  });
});
