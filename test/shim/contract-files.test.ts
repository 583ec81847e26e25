// The shim contract, files on the relay: links, removal, directories and archives, the same
// for every shim (node, python, posix) against the run's shared relay
// (test/shim/contract-support.ts).
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { failureLine } from "./run-shim";
import { buildTree, listTree, rawTarGz } from "./tar-trees";
import {
  SHIM_NAMES,
  contractSuite,
  download,
  expectRefusal,
  sha256,
  shimSession,
} from "./contract-support";

const contract = contractSuite("airlock-contract-files-");

describe.each(SHIM_NAMES)("the %s shim's files on the relay", (name) => {
  const s = shimSession(contract, name);

  it("mints a one-download link and deletes a file (unsupported by the POSIX shim)", async () => {
    if (name === "posix") {
      expectRefusal(await s.airlock(["link", "fil_x"]), /link is not supported/);
      expectRefusal(await s.airlock(["rm", "fil_x"]), /rm is not supported/);
      return;
    }
    const bytes = randomBytes(4000);
    await writeFile(join(s.work, "linked.bin"), bytes);
    const sent = await s.sendJson("linked.bin");
    const fileId = sent.fileId as string;
    const minted = await s.airlock(["link", fileId, "--max-downloads", "1", "--json"]);
    expect(minted.stderr).toBe("");
    expect(minted.code).toBe(0);
    const link = JSON.parse(minted.stdout) as Record<string, unknown>;
    expect(Object.keys(link)).toEqual(["fileId", "url", "expiresAt", "maxDownloads"]);
    expect(link).toMatchObject({ fileId, maxDownloads: 1 });
    expect(sha256(await download(link.url as string))).toBe(sha256(bytes));
    expect((await fetch(link.url as string)).status).toBe(410);

    const removed = await s.airlock(["rm", fileId]);
    expect(removed).toMatchObject({ code: 0, stdout: `deleted ${fileId}\n`, stderr: "" });
    expect((await fetch(sent.url as string)).status).toBe(410);
    const again = await s.airlock(["rm", fileId]);
    expect(again.code).toBe(1);
    const line = failureLine(again);
    expect(line).toBe(
      `airlock: relay refused deleting file ${fileId}: file_not_found: no such file`,
    );
  });

  it("sends a directory as a .tar.gz and gets it back extracted (unsupported by the POSIX shim)", async () => {
    const src = await mkdtemp(join(s.work, "src-"));
    const tree = await buildTree(src, "proj", true);
    if (!s.supports("directories")) {
      const result = await s.airlock(["send", tree]);
      expect(result.code).toBe(1);
      expect(failureLine(result)).toMatch(/is a directory: the POSIX shim sends single files/);
      expectRefusal(await s.airlock(["get", "f_x", "--extract"]), /get is not supported/);
      return;
    }
    const sent = await s.sendJson(tree);
    expect(sent).toMatchObject({ name: "proj.tar.gz", archive: true });
    expect(sent.files).toBeGreaterThan(3);
    const out = join(s.work, "extracted");
    const got = await s.airlock(["get", sent.fileId as string, "--extract", "-o", out]);
    expect(got.stderr).toBe("");
    expect(got.code).toBe(0);
    expect(got.stdout).toBe(`${join(out, "proj")}\n`);
    expect(await listTree(join(out, "proj"))).toEqual(await listTree(tree));
  });

  it("refuses a get --extract of an archive over --max-entries, writing nothing", async () => {
    const many = rawTarGz(
      [0, 1, 2, 3, 4, 5].map((i) => ({ name: `many/${i}.txt`, body: `${i}\n` })),
    );
    await writeFile(join(s.work, "many.tar.gz"), many);
    const out = join(s.work, "many-out");
    await mkdir(out);
    if (!s.supports("extract")) {
      const args = ["get", "f_x", "--extract", "--max-entries", "5", "-o", out];
      expectRefusal(await s.airlock(args), /get is not supported/);
      return;
    }
    const sent = await s.sendJson("many.tar.gz");
    const get = (max: string) =>
      s.airlock(["get", sent.fileId as string, "--extract", "--max-entries", max, "-o", out]);
    const refused = await get("5");
    expect(refused.stdout).toBe("");
    expect(refused.code).toBe(1);
    const line = failureLine(refused);
    expect(line).toBe(
      'airlock: refusing to extract many.tar.gz: "many/5.txt" takes the archive over 5 entries ' +
        "(raise it with --max-entries); nothing was extracted",
    );
    contract.sameAsNode(s.driver, "too many entries", line);
    expect(await readdir(out)).toEqual([]);
    const taken = await get("6");
    expect(taken.code, taken.stderr).toBe(0);
    expect(Object.keys(await listTree(join(out, "many"))).sort()).toHaveLength(6);
  });

  it("extracts modes within the user's umask (0777 in the archive)", async () => {
    if (!s.supports("extract")) return;
    const open = rawTarGz([
      { name: "open/", type: "5", mode: 0o777 },
      { name: "open/run.sh", body: "#!/bin/sh\n", mode: 0o777 },
    ]);
    await writeFile(join(s.work, "open.tar.gz"), open);
    const sent = await s.sendJson("open.tar.gz");
    const out = join(s.work, "open-out");
    const got = await s.airlock(["get", sent.fileId as string, "--extract", "-o", out]);
    expect(got.code, got.stderr).toBe(0);
    // The shims inherit this process's umask.
    const mode = (0o777 & ~process.umask()).toString(8);
    expect(await listTree(join(out, "open"), false)).toEqual({
      "run.sh": expect.stringMatching(new RegExp(`^file ${mode} `)),
    });
    expect(((await stat(join(out, "open"))).mode & 0o777).toString(8)).toBe(mode);
  });

  it("refuses a get --extract of an archive with an entry escaping its directory", async () => {
    const evil = rawTarGz([
      { name: "proj/ok.txt", body: "ok\n" },
      { name: "proj/../../escape.txt", body: "gotcha\n" },
    ]);
    await writeFile(join(s.work, "evil.tar.gz"), evil);
    const out = join(s.work, "evil-out");
    await mkdir(out);
    if (!s.supports("extract")) {
      expectRefusal(
        await s.airlock(["get", "f_x", "--extract", "-o", out]),
        /get is not supported/,
      );
      expectRefusal(
        await s.airlock(["pull", "--extract", "--dir", out]),
        /--extract is not supported/,
      );
      return;
    }
    const sent = await s.sendJson("evil.tar.gz");
    const result = await s.airlock(["get", sent.fileId as string, "--extract", "-o", out]);
    expect(result.stdout).toBe("");
    expect(result.code).toBe(1);
    const line = failureLine(result);
    expect(line).toBe(
      'airlock: refusing to extract evil.tar.gz: "proj/../../escape.txt" has a .. component; nothing was extracted',
    );
    contract.sameAsNode(s.driver, "escaping archive", line);
    expect(await readdir(out)).toEqual([]);
    expect(existsSync(join(s.work, "escape.txt"))).toBe(false);
  });
});
