// `airlock send` resuming (or not) an upload a failed run saved, against the fake relay (a store
// that fails, forgets or loses parts).
import { open, readFile, utimes, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MiB, PART, RANDOM_SIZE, fakeMultipart, multipartFiles, sha256 } from "./multipart-fixture";

const files = multipartFiles(false);

describe("airlock send resuming a saved multipart upload", () => {
  const m = fakeMultipart(files);

  it("uploads afresh a file changed between runs, even with its size and mtime kept", async () => {
    const path = await m.copyOfRandom("changing.bin");
    const mtime = new Date("2024-05-01T12:00:00Z");
    await utimes(path, mtime, mtime);
    const first = await m.failedRun(path);

    const handle = await open(path, "r+");
    await handle.write(randomBytes(MiB), 0, MiB, 20 * MiB);
    await handle.close();
    await utimes(path, mtime, mtime);
    const changedSha = sha256(await readFile(path));

    const result = m.sent(await m.send(path));
    expect(m.relay.routes().some((r) => r.startsWith("GET /v1/uploads/"))).toBe(false);
    expect(m.uploads()).toHaveLength(2);
    const second = m.uploads().find((u) => u !== first)!;
    expect(second.sha256).toBe(changedSha);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
    expect(m.stored(result)).toBe(changedSha);
    expect(await m.stateFiles()).toEqual([]); // the stale entry went too
  });

  it("uploads afresh when the relay has forgotten the saved upload (404)", async () => {
    const first = await m.failedRun(files.randomPath);
    m.relay.forgetUpload(first.uploadId);
    const result = m.sent(await m.send(files.randomPath));
    expect(m.relay.routes()).toContain(`GET /v1/uploads/${first.uploadId}`);
    expect(m.uploads()).toHaveLength(1); // the forgotten one is gone from the map
    expect(m.uploads()[0]!.uploadId).not.toBe(first.uploadId);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
    expect(m.stored(result)).toBe(files.randomSha);
    expect(await m.stateFiles()).toEqual([]);
  });

  it("ignores a saved upload two days old", async () => {
    const first = await m.failedRun(files.randomPath);
    const [name] = await m.stateFiles();
    const file = join(m.stateDir(), name!);
    const saved = JSON.parse(await readFile(file, "utf8")) as { createdAt: string };
    saved.createdAt = new Date(Date.now() - 49 * 3_600_000).toISOString();
    await writeFile(file, JSON.stringify(saved));

    const result = m.sent(await m.send(files.randomPath));
    expect(m.relay.routes().some((r) => r.startsWith("GET /v1/uploads/"))).toBe(false);
    expect(m.uploads()).toHaveLength(2);
    expect(m.uploads().some((u) => u !== first && u.file)).toBe(true);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
    expect(await m.stateFiles()).toEqual([]);
  });

  it("sends a part again when complete finds it missing, then completes", async () => {
    let dropped = false;
    m.relay.onCall((call) => {
      const completing = /^\/v1\/uploads\/([^/]+)\/complete$/.exec(call.path);
      if (completing && !dropped) {
        dropped = true;
        m.relay.dropPart(completing[1]!, 5);
      }
    });
    const result = m.sent(await m.send(files.randomPath));
    expect(m.relay.routes().filter((r) => r.endsWith("/complete"))).toHaveLength(2);
    expect(m.putsOf(5).map((p) => p.status)).toEqual([200, 200]);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE + PART);
    expect(m.stored(result)).toBe(files.randomSha);
  });
});
