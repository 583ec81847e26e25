// The shim contract, sending: every shim (node, python, posix) sends the same files to the run's
// shared relay and is held to the same outcomes (test/shim/contract-support.ts).
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { failureLine } from "./run-shim";
import { MiB, SHIM_NAMES, contractSuite, download, sha256, shimSession } from "./contract-support";

const SEND_JSON_FIELDS = [
  "fileId",
  "name",
  "size",
  "sha256",
  "url",
  "expiresAt",
  "fileExpiresAt",
  "status",
  "deduped",
  "uploadedBytes",
  "deliveries",
];

/** The relay's defaults (src/config.ts): a share link lasts a day, the file a week. */
const LINK_TTL_SECONDS = 86_400;
const FILE_TTL_SECONDS = 7 * 86_400;

const contract = contractSuite("airlock-contract-send-");

describe.each(SHIM_NAMES)("the %s shim sends to the relay", (name) => {
  const s = shimSession(contract, name);

  const filesBySha = async (sha: string) => {
    const answer = await contract.suite.api(s.token, "GET", "/v1/files");
    expect(answer.status).toBe(200);
    const files = answer.body.files as { sha256: string; deduped: boolean; fileId: string }[];
    return files.filter((f) => f.sha256 === sha);
  };

  it("sends a file byte-exact (SHA-256 of the bytes behind the share URL)", async () => {
    const bytes = randomBytes(300_000);
    await writeFile(join(s.work, "random.bin"), bytes);
    const result = await s.airlock(["send", "random.bin"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+\n$/);
    expect(sha256(await download(result.stdout.trim()))).toBe(sha256(bytes));
  });

  it("re-sends a file as a dedup hit: nothing uploaded", async () => {
    const bytes = randomBytes(200_000);
    await writeFile(join(s.work, "again.bin"), bytes);
    const first = await s.sendJson("again.bin");
    expect(first).toMatchObject({ deduped: false, uploadedBytes: bytes.length });
    const second = await s.sendJson("again.bin");
    expect(second).toMatchObject({ deduped: true, uploadedBytes: 0, sha256: sha256(bytes) });
    const records = await filesBySha(sha256(bytes));
    expect(records.map((r) => r.deduped).sort()).toEqual([false, true]);
  });

  it("gzips text where it pays (unsupported by the POSIX shim: sent as it is)", async () => {
    const text = Buffer.from(
      Array.from({ length: 6000 }, (_, i) => `line ${i}: the quick brown fox\n`).join(""),
    );
    await writeFile(join(s.work, "notes.txt"), text);
    let url: string;
    if (s.supports("gzip")) {
      const sent = await s.sendJson("notes.txt");
      expect(sent.size).toBe(text.length);
      expect(sent.uploadedBytes as number).toBeLessThan(text.length / 4);
      url = sent.url as string;
    } else {
      const result = await s.airlock(["send", "notes.txt"]);
      expect(result.code).toBe(0);
      url = result.stdout.trim();
    }
    expect(sha256(await download(url))).toBe(sha256(text));
  });

  it("fails on a missing file with exit 1 and one stderr line", async () => {
    const result = await s.airlock(["send", "nope.bin"]);
    expect(result.stdout).toBe("");
    expect(result.code).toBe(1);
    const line = failureLine(result);
    if (name === "posix") expect(line).toBe("airlock: no such file: nope.bin");
    else expect(line).toBe("airlock: cannot read nope.bin: no such file or directory");
  });

  it("fails on a bad token with exit 1, one stderr line naming the relay's refusal", async () => {
    await writeFile(join(s.work, "small.txt"), "small\n");
    const result = await s.airlock(["send", "small.txt"], { AIRLOCK_TOKEN: "not-a-token" });
    expect(result.stdout).toBe("");
    expect(result.code).toBe(1);
    const line = failureLine(result);
    expect(line).toMatch(/invalid_token/);
    contract.sameAsNode(s.driver, "bad token", line);
  });

  it("fails on a missing AIRLOCK_URL with exit 2 and one stderr line", async () => {
    const result = await s.airlock(["send", "small.txt"], { AIRLOCK_URL: "" });
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe(
      "airlock: AIRLOCK_URL is not set; set it to the relay's base URL",
    );
  });

  it("prints send --json with the same fields in the same order", async () => {
    const bytes = randomBytes(5000);
    await writeFile(join(s.work, "fields.bin"), bytes);
    const sent = await s.sendJson("fields.bin");
    expect(Object.keys(sent).sort()).toEqual([...SEND_JSON_FIELDS].sort());
    contract.sameAsNode(s.driver, "send --json key order", Object.keys(sent).join(","), true);
    expect(sent).toMatchObject({ name: "fields.bin", size: 5000, sha256: sha256(bytes) });
    expect(sent.status).toBe("verified");
    expect(sent.deliveries).toEqual([]);
  });

  it("tells in send --json when the link stops working and when the file goes", async () => {
    const bytes = randomBytes(3000);
    await writeFile(join(s.work, "expiry.bin"), bytes);
    const before = Date.now();
    const sent = await s.sendJson("expiry.bin");
    const after = Date.now();
    const linkExpires = Date.parse(sent.expiresAt as string);
    const fileExpires = Date.parse(sent.fileExpiresAt as string);
    expect(linkExpires).toBeLessThan(fileExpires);
    // The relay keeps a link's expiry in whole seconds.
    expect(linkExpires).toBeGreaterThanOrEqual(before - 1000 + LINK_TTL_SECONDS * 1000);
    expect(linkExpires).toBeLessThanOrEqual(after + LINK_TTL_SECONDS * 1000);
    expect(fileExpires).toBeGreaterThanOrEqual(before - 1000 + FILE_TTL_SECONDS * 1000);
    expect(fileExpires).toBeLessThanOrEqual(after + FILE_TTL_SECONDS * 1000);
    expect(sha256(await download(sent.url as string))).toBe(sha256(bytes));
  });

  it("sends a file whose name curl would read as a pattern byte-exact (notes {draft}.bin, > 1 MiB)", async () => {
    const bytes = randomBytes(MiB + 100_000);
    await writeFile(join(s.work, "notes {draft}.bin"), bytes);
    // What curl's globbing would send instead: `notes {draft}.bin` names `notes draft.bin`.
    await writeFile(join(s.work, "notes draft.bin"), randomBytes(MiB + 100_000));
    const sent = await s.sendJson("notes {draft}.bin");
    expect(sent).toMatchObject({ name: "notes {draft}.bin", sha256: sha256(bytes) });
    expect(sha256(await download(sent.url as string))).toBe(sha256(bytes));
  });
});
