// `airlock link` and `airlock rm`: the built Node shim as a subprocess against the real relay
// (`wrangler dev`); every link is proven by downloading through it.
import { createHash, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { relaySuite } from "../support/relay-suite";
import { failureLine, relayEnv, runShim } from "./run-shim";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const LINK_USAGE = "airlock link <fileId> [--expires <duration>] [--max-downloads <n>] [--json]";
const FILE_TTL_SECONDS = 3 * 86400;

const suite = relaySuite({ vars: { FILE_TTL_SECONDS: String(FILE_TTL_SECONDS) } }, "airlock-link-");
let token: string;
let otherToken: string;

beforeAll(async () => {
  token = (await suite.relay.mintSession()).token;
  otherToken = (await suite.relay.mintSession()).token;
});

const airlock = (args: string[], as = token) =>
  runShim(args, { env: relayEnv(suite.relay.url, as), cwd: suite.dir });

/** Sends fresh random bytes with the shim; returns the file id and the bytes. */
async function sendFile(name: string, as = token): Promise<{ fileId: string; bytes: Buffer }> {
  const bytes = randomBytes(20_000);
  await writeFile(join(suite.dir, name), bytes);
  const result = await airlock(["send", "--json", name], as);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return { fileId: (JSON.parse(result.stdout) as { fileId: string }).fileId, bytes };
}

/** GETs a share link: its status, the error code when refused, the bytes' SHA-256 when not. */
async function fetchLink(url: string): Promise<{ status: number; code?: string; sha256?: string }> {
  const response = await fetch(url);
  const body = Buffer.from(await response.arrayBuffer());
  if (response.status === 200) return { status: 200, sha256: sha256(body) };
  const parsed = JSON.parse(body.toString("utf8")) as { error: { code: string } };
  return { status: response.status, code: parsed.error.code };
}

interface LinkJson {
  fileId: string;
  url: string;
  expiresAt: string;
  maxDownloads: number | null;
}

describe("airlock link", () => {
  it("prints a fresh link that serves the file", async () => {
    const { fileId, bytes } = await sendFile("plain.bin");
    const result = await airlock(["link", fileId]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+\n$/);
    expect(await fetchLink(result.stdout.trim())).toEqual({ status: 200, sha256: sha256(bytes) });
  });

  it("with --max-downloads 1 and --json: serves once, then refuses", async () => {
    const { fileId, bytes } = await sendFile("once.bin");
    const before = Date.now();
    const result = await airlock([
      "link",
      fileId,
      "--expires",
      "2h",
      "--max-downloads",
      "1",
      "--json",
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const minted = JSON.parse(result.stdout) as LinkJson;
    expect(Object.keys(minted)).toEqual(["fileId", "url", "expiresAt", "maxDownloads"]);
    expect(minted).toMatchObject({ fileId, maxDownloads: 1 });
    // Two hours from when it was asked for (the relay keeps whole seconds).
    const expires = Date.parse(minted.expiresAt);
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 7200_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 7200_000);

    expect(await fetchLink(minted.url)).toEqual({ status: 200, sha256: sha256(bytes) });
    expect(await fetchLink(minted.url)).toEqual({ status: 410, code: "link_exhausted" });
    // Another link to the same file is its own: it still serves.
    const fresh = await airlock(["link", fileId]);
    expect(await fetchLink(fresh.stdout.trim())).toEqual({ status: 200, sha256: sha256(bytes) });
  });

  it("with --expires: works until then and stops after (a bare number is seconds)", async () => {
    const { fileId, bytes } = await sendFile("short.bin");
    const result = await airlock(["link", fileId, "--expires", "8", "--json"]);
    expect(result.code).toBe(0);
    const minted = JSON.parse(result.stdout) as LinkJson;
    expect(minted.maxDownloads).toBeNull();
    expect(await fetchLink(minted.url)).toEqual({ status: 200, sha256: sha256(bytes) });
    // Wait out the expiry the relay reported, then a second more.
    const wait = Date.parse(minted.expiresAt) + 1000 - Date.now();
    await new Promise((resolve) => setTimeout(resolve, Math.max(wait, 0)));
    expect(await fetchLink(minted.url)).toEqual({ status: 410, code: "link_expired" });
  });

  it("refuses a link that would outlive its file, naming --expires", async () => {
    const { fileId } = await sendFile("outlive.bin");
    const result = await airlock(["link", fileId, "--expires", "4d"]);
    expect(result.stdout).toBe("");
    expect(result.code).toBe(1);
    expect(failureLine(result)).toMatch(
      new RegExp(
        `^airlock: relay refused a new link to file ${fileId}: invalid_request: --expires: ` +
          "the file expires in \\d+ s; a link cannot outlive it$",
      ),
    );
  });

  it("answers an unknown file, and another session's, with the relay's 404 and exit 1", async () => {
    const unknown = await airlock(["link", "fil_doesnotexist"]);
    expect(unknown.stdout).toBe("");
    expect(unknown.code).toBe(1);
    expect(failureLine(unknown)).toBe(
      "airlock: relay refused a new link to file fil_doesnotexist: file_not_found: no such file",
    );
    const { fileId } = await sendFile("theirs.bin", otherToken);
    const foreign = await airlock(["link", fileId]);
    expect(foreign.code).toBe(1);
    expect(failureLine(foreign)).toBe(
      `airlock: relay refused a new link to file ${fileId}: file_not_found: no such file`,
    );
  });

  it.each([
    [[], `airlock: link takes exactly one file id; usage: ${LINK_USAGE}`],
    [["a", "b"], `airlock: link takes exactly one file id; usage: ${LINK_USAGE}`],
    [
      ["fil_x", "--max-downloads", "0"],
      `airlock: --max-downloads must be a whole number from 1 to 1000000, not 0; usage: ${LINK_USAGE}`,
    ],
    [
      ["fil_x", "--max-downloads", "2.5"],
      `airlock: --max-downloads must be a whole number from 1 to 1000000, not 2.5; usage: ${LINK_USAGE}`,
    ],
    [
      ["fil_x", "--expires", "tomorrow"],
      `airlock: --expires tomorrow is not a duration such as 90s, 10m, 24h or 7d; usage: ${LINK_USAGE}`,
    ],
  ])("refuses link %j with one usage line and exit 2", async (args, line) => {
    const result = await airlock(["link", ...args]);
    expect(result.stdout).toBe("");
    expect(failureLine(result)).toBe(line);
    expect(result.code).toBe(2);
  });
});

describe("airlock rm", () => {
  it("deletes a file: its links stop working and ls no longer lists it", async () => {
    const { fileId, bytes } = await sendFile("doomed.bin");
    const link = (await airlock(["link", fileId])).stdout.trim();
    expect(await fetchLink(link)).toEqual({ status: 200, sha256: sha256(bytes) });

    const result = await airlock(["rm", fileId]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`deleted ${fileId}\n`);

    expect(await fetchLink(link)).toEqual({ status: 410, code: "file_deleted" });
    const listed = await airlock(["ls", "--json"]);
    expect(listed.code).toBe(0);
    const ids = listed.stdout
      .trimEnd()
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => (JSON.parse(line) as { fileId: string }).fileId);
    expect(ids).not.toContain(fileId);
    expect(ids.length).toBeGreaterThan(0);

    // Twice: the relay's 404, one line, exit 1.
    const again = await airlock(["rm", fileId]);
    expect(again.stdout).toBe("");
    expect(again.code).toBe(1);
    expect(failureLine(again)).toBe(
      `airlock: relay refused deleting file ${fileId}: file_not_found: no such file`,
    );
  });

  it("cannot delete another session's file: 404, and the file stays", async () => {
    const { fileId, bytes } = await sendFile("kept.bin", otherToken);
    const result = await airlock(["rm", fileId]);
    expect(result.stdout).toBe("");
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      `airlock: relay refused deleting file ${fileId}: file_not_found: no such file`,
    );
    const theirs = await airlock(["link", fileId], otherToken);
    expect(await fetchLink(theirs.stdout.trim())).toEqual({ status: 200, sha256: sha256(bytes) });
  });

  it("refuses anything but one file id with a usage line and exit 2", async () => {
    for (const args of [[], ["a", "b"]]) {
      const result = await airlock(["rm", ...args]);
      expect(result.code).toBe(2);
      expect(failureLine(result)).toBe(
        "airlock: rm takes exactly one file id; usage: airlock rm <fileId>",
      );
    }
  });
});
