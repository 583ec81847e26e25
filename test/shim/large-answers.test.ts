import { createServer, type Server } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareShim } from "./run-shim";
import { runDriver, shimDrivers, type ShimDriver } from "./shims";

/**
 * A relay's JSON answer can be far over the 64 KiB a shim keeps of an error body: a multipart
 * declaration on s3 carries a signed URL per part (about 90 KB for 1 GiB). Both shims read
 * it whole; here a file listing of 2,000 records (about 700 KB) stands in for it.
 */
const FILES = Array.from({ length: 2000 }, (_, i) => ({
  fileId: `fil_${String(i).padStart(6, "0")}`,
  sessionId: "ses_large",
  name: `report-${i}.csv`,
  size: 1000 + i,
  status: "verified",
  sha256: "ab".repeat(32),
  contentType: "text/csv",
  createdAt: "2026-11-23T00:00:00.000Z",
  expiresAt: "2026-11-30T00:00:00.000Z",
  deduped: false,
  url: `http://127.0.0.1/d/${"x".repeat(200)}${i}`,
  urlExpiresAt: "2026-11-24T00:00:00.000Z",
}));

let server: Server;
let url: string;
let scratch: string;
let drivers: ShimDriver[];

beforeAll(async () => {
  prepareShim();
  scratch = await mkdtemp(join(tmpdir(), "airlock-large-answers-"));
  drivers = (await shimDrivers(scratch)).filter((d) => d.name !== "posix"); // no ls there
  server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/v1/files") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ files: FILES }));
    } else {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "not_found", message: "no such route" } }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("a relay answer over 64 KiB", () => {
  it("is read whole by every shim with ls", async () => {
    expect(JSON.stringify({ files: FILES }).length).toBeGreaterThan(512 * 1024);
    expect(drivers.map((d) => d.name)).toEqual(["node", "python"]);
    for (const driver of drivers) {
      const result = await runDriver(driver, ["ls", "--json"], {
        env: { AIRLOCK_URL: url, AIRLOCK_TOKEN: "t" },
        cwd: scratch,
        home: scratch,
      });
      expect(result.stderr, driver.name).toBe("");
      expect(result.code, driver.name).toBe(0);
      const ids = result.stdout
        .trim()
        .split("\n")
        .map((line) => (JSON.parse(line) as { fileId: string }).fileId);
      expect(ids, driver.name).toEqual(FILES.map((f) => f.fileId));
    }
  }, 120_000);
});
