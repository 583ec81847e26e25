// The SDK's downloads of files a relay names with hostile names: downloadToDir keeps each inside
// the directory under its cleaned name, downloadToFile refuses a path built from one. The relay
// is a fetch function answering for one file (no server).
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { AirlockClient, type FetchLike } from "../../sdk/src/node";
import { shimScratchDir } from "../shim/scratch-dir";
import { HOSTILE_NAMES, allPaths } from "./sandbox-side-names-support";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const root = shimScratchDir("airlock-sandbox-names-sdk-");

describe("the SDK's downloads of files the relay names", () => {
  let base: string;

  beforeEach(async () => {
    base = await mkdtemp(join(root(), "sdk-"));
  });

  /** A relay answering GET /v1/files/:id and its content for one file with `name`. */
  function relayServing(name: string, bytes: Buffer): FetchLike {
    const record = {
      fileId: "f_1",
      name,
      size: bytes.length,
      sha256: sha256(bytes),
      contentType: "application/octet-stream",
      createdAt: new Date().toISOString(),
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      url: "http://relay.invalid/d/x",
      urlExpiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      sessionId: "s_1",
      deduped: false,
    };
    return (url) =>
      Promise.resolve(
        url.endsWith("/content")
          ? new Response(new Uint8Array(bytes), { status: 200 })
          : Response.json(record),
      );
  }

  it.each(HOSTILE_NAMES.map((name) => [JSON.stringify(name).slice(0, 60), name]))(
    "downloadToDir keeps %s inside the directory, under its cleaned name",
    async (_shown, name) => {
      const bytes = randomBytes(2000);
      const out = join(base, "a", "out");
      await mkdir(out, { recursive: true });
      const airlock = new AirlockClient({
        url: "http://relay.invalid",
        adminToken: "admin",
        fetch: relayServing(name, bytes),
      });
      const first = await airlock.downloadToDir("f_1", out);
      const second = await airlock.downloadToDir("f_1", out);
      expect(first.path.startsWith(`${out}/`)).toBe(true);
      expect(first.path.slice(out.length + 1)).not.toMatch(
        /[/\\\u0000-\u001f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}]/u,
      );
      expect(second.path).not.toBe(first.path); // Numbered, never replacing.
      expect(sha256(await readFile(first.path))).toBe(sha256(bytes));
      expect(sha256(await readFile(second.path))).toBe(sha256(bytes));
      expect((await allPaths(base)).filter((p) => !p.startsWith("a/out/"))).toEqual(["a", "a/out"]);
      expect(await readdir(out)).toHaveLength(2);
    },
  );

  it("downloadToFile refuses a path built from a hostile name, writing nothing", async () => {
    const bytes = randomBytes(100);
    const out = join(base, "a", "out");
    await mkdir(out, { recursive: true });
    const airlock = new AirlockClient({
      url: "http://relay.invalid",
      adminToken: "admin",
      fetch: relayServing("../../x.txt", bytes),
    });
    const record = await airlock.getFile("f_1");
    await expect(airlock.downloadToFile("f_1", `${out}/${record.name}`)).rejects.toThrow(
      "Airlock: downloadToFile's path climbs out of a directory it names; for names from the relay, use downloadToDir",
    );
    await expect(airlock.downloadToFile("f_1", `${out}/two\nlines.txt`)).rejects.toThrow(
      "Airlock: downloadToFile's file name must not contain control, bidi-override or invisible characters; for names from the relay, use downloadToDir",
    );
    expect(existsSync(join(base, "x.txt"))).toBe(false);
    expect(await allPaths(base)).toEqual(["a", "a/out"]);
    // A path the caller chose still works.
    await airlock.downloadToFile("f_1", join(out, "chosen.bin"));
    expect(sha256(await readFile(join(out, "chosen.bin")))).toBe(sha256(bytes));
  });
});
