import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFaultProxy, type FaultProxy } from "../fixtures/fault-proxy";
import { prepareShim, runShim } from "../shim/run-shim";
import { ARTIFACTS, launchChromium } from "../support/chromium";
import { type RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Runs curl and collects its exit code, stdout and the HTTP status it printed last. */
function curl(
  args: string[],
  stdin?: Uint8Array,
): Promise<{ code: number; body: string; status: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn("curl", ["-sS", "-w", "\n%{http_code}", ...args], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const cut = out.lastIndexOf("\n");
      resolve({ code: code ?? -1, body: out.slice(0, cut), status: Number(out.slice(cut + 1)) });
    });
    child.stdin.end(stdin ? Buffer.from(stdin) : undefined);
  });
}

describe("the upload page in a real browser (Debian chromium under playwright-core)", () => {
  let relay: RunningRelay;
  let proxy: FaultProxy;
  let browser: Browser;
  let context: BrowserContext;
  let dir: string;
  let token: string;
  const cspErrors: string[] = [];

  beforeAll(async () => {
    prepareShim();
    dir = await mkdtemp(join(tmpdir(), "airlock-upload-page-"));
    relay = sharedRelay();
    // Between the browser and the relay, so a test can drop one part's connection. The relay
    // sees the proxy's host, so the links it mints point at the proxy.
    proxy = await startFaultProxy({ target: relay.url, host: "preserve" });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
  });
  // A session per test: its inbox holds only what that test stored, even after another failed.
  beforeEach(async () => {
    token = (await relay.mintSession()).token;
  });
  afterAll(async () => {
    await browser?.close();
    await proxy?.stop();
    await relay?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const shimEnv = (url = proxy.url) => ({ AIRLOCK_URL: url, AIRLOCK_TOKEN: token });

  /** `airlock request … --json` through the proxy, as an agent would run it. */
  async function request(args: string[] = []): Promise<CreatedRequest> {
    const result = await runShim(["request", ...args, "--json"], { env: shimEnv() });
    expect(result.code, result.stderr).toBe(0);
    const created = JSON.parse(result.stdout) as CreatedRequest;
    expect(created.url.startsWith(`${proxy.url}/u/`)).toBe(true);
    return created;
  }

  /** `airlock pull --json` into a fresh directory; returns the written files' bytes by name. */
  async function pull(): Promise<Map<string, Buffer>> {
    const into = await mkdtemp(join(dir, "pulled-"));
    const result = await runShim(["pull", "--dir", into, "--json"], { env: shimEnv(relay.url) });
    expect(result.code, result.stderr).toBe(0);
    const files = new Map<string, Buffer>();
    for (const name of await readdir(into)) files.set(name, await readFile(join(into, name)));
    return files;
  }

  async function open(url: string, status = 200): Promise<Page> {
    const page = await context.newPage();
    page.on("console", (message) => {
      if (/Content.Security.Policy/i.test(message.text())) cspErrors.push(message.text());
    });
    const response = await page.goto(url);
    expect(response?.status()).toBe(status);
    expect(response?.headers()["content-type"]).toBe("text/html; charset=utf-8");
    return page;
  }

  it(
    "takes a 24 MB file in parts with progress, resumes a dropped part, and pull gets it byte-exact",
    { timeout: 600_000 },
    async () => {
      const bytes = randomBytes(24_000_000);
      const path = join(dir, "measurements.bin");
      await writeFile(path, bytes);
      const created = await request(["--name", "measurements.bin", "--max-bytes", "100M"]);
      // The third part's connection drops after 1 MiB: the page must send it again by itself.
      proxy.inject({
        method: "PUT",
        path: /\/uploads\/[^/]+\/parts\/3$/,
        fault: { kind: "reset-request", afterBytes: 1024 * 1024 },
        times: 1,
      });

      const page = await open(created.url);
      await expect(page.locator("main strong").textContent()).resolves.toBe("measurements.bin");
      // Page-side code as strings: this project's TypeScript has no DOM types.
      await page.evaluate(`
        window.progressSeen = [];
        new MutationObserver(() => window.progressSeen.push(document.getElementById("progress").value))
          .observe(document.getElementById("progress"), { attributes: true });
      `);
      await page.setInputFiles("#file", path);
      await page.waitForSelector("body[data-uploaded=true]", { timeout: 480_000 });
      await expect(page.locator("#status").textContent()).resolves.toBe(
        "Received: measurements.bin (23 MiB). You can close this page.",
      );
      const seen = (await page.evaluate("window.progressSeen")) as number[];
      expect(seen.some((value) => value > 0 && value < 1)).toBe(true);
      expect(seen.at(-1)).toBe(1);
      await page.screenshot({ path: join(ARTIFACTS, "upload-page-done.png"), fullPage: true });
      await page.close();

      const partThree = proxy.requests.filter((r) => /\/parts\/3$/.test(r.path));
      expect(partThree.map((r) => r.fault)).toEqual(["reset-request", null]);
      expect(partThree[1]?.status).toBe(204);
      const partPuts = proxy.requests.filter((r) => r.method === "PUT" && /\/parts\//.test(r.path));
      expect(partPuts.filter((r) => r.status === 204)).toHaveLength(3);
      expect(cspErrors).toEqual([]);

      const pulled = await pull();
      expect([...pulled.keys()]).toEqual(["measurements.bin"]);
      expect(sha256(pulled.get("measurements.bin")!)).toBe(sha256(bytes));

      const used = await open(created.url, 410);
      await expect(used.locator("h1").textContent()).resolves.toBe("This link has been used");
      await used.close();
    },
  );

  it(
    "resumes after a reload: picking the same file again sends only the missing part",
    { timeout: 300_000 },
    async () => {
      const bytes = randomBytes(20_000_000);
      const path = join(dir, "resumed.bin");
      await writeFile(path, bytes);
      const created = await request();
      // Part 2 keeps failing (the page keeps retrying it) until the page is reloaded.
      proxy.inject({
        method: "PUT",
        path: /\/uploads\/[^/]+\/parts\/2$/,
        fault: { kind: "status", status: 503 },
        times: Infinity,
      });
      // Part 1 arrives late, as on a busy machine: the reload must still wait until it is stored.
      proxy.inject({
        method: "PUT",
        path: /\/parts\/1$/,
        fault: { kind: "stall", ms: 2000 },
        times: 1,
      });
      const page = await open(created.url);
      // Only this upload's requests: the proxy also recorded the earlier tests' parts.
      const start = proxy.requests.length;
      await page.setInputFiles("#file", path);
      const stored = (n: number) =>
        proxy.requests.slice(start).some((r) => r.path.endsWith(`/parts/${n}`) && r.status === 204);
      const refusedTwo = () =>
        proxy.requests.slice(start).some((r) => r.path.endsWith("/parts/2") && r.status === 503);
      // Parts 1 and 3 stored, part 2 refused (the page retries it until it gives up).
      while (!(stored(1) && stored(3) && refusedTwo()))
        await new Promise((r) => setTimeout(r, 200));

      await page.reload();
      proxy.clearFaults();
      const before = proxy.requests.length;
      await page.setInputFiles("#file", path);
      await page.waitForSelector("body[data-uploaded=true]", { timeout: 240_000 });
      const after = proxy.requests
        .slice(before)
        .map((r) => `${r.method} ${r.path.replace(/^.*\/uploads/, "")}`);
      // No new start and no part sent twice: a state lookup, part 2, complete.
      expect(after.filter((line) => line.startsWith("PUT"))).toEqual([
        expect.stringMatching(/^PUT \/upl_[A-Za-z0-9_-]{22}\/parts\/2$/),
      ]);
      expect(after.filter((line) => line === "POST ")).toEqual([]);
      await page.close();

      const pulled = await pull();
      expect([...pulled.keys()]).toEqual(["resumed.bin"]);
      expect(sha256(pulled.get("resumed.bin")!)).toBe(sha256(bytes));
    },
  );

  it("airlock request prints the bare URL, and one plain line for bad options", async () => {
    const plain = await runShim(["request", "--name", "invoice.pdf"], { env: shimEnv() });
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toMatch(new RegExp(`^${proxy.url}/u/[A-Za-z0-9_-]{43}\n$`));
    const page = await open(plain.stdout.trim());
    await expect(page.locator("main strong").textContent()).resolves.toBe("invoice.pdf");
    await page.close();

    const usage =
      "airlock request [--name <hint>] [--max-bytes <n>] [--expires <duration>] [--json] | airlock request --cancel <requestId>";
    for (const [args, message] of [
      [
        ["--expires", "soon"],
        `airlock: --expires soon is not a duration such as 90s, 10m, 24h or 7d; usage: ${usage}`,
      ],
      [
        ["--max-bytes", "0"],
        `airlock: --max-bytes needs a positive number of bytes (e.g. 500M, 20G), not "0"; usage: ${usage}`,
      ],
      [["extra"], `airlock: request takes no arguments; usage: ${usage}`],
    ] as const) {
      const result = await runShim(["request", ...args], { env: shimEnv() });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderrLines).toEqual([message]);
    }
    const refused = await runShim(["request", "--max-bytes", "6G"], { env: shimEnv() });
    expect(refused.code).toBe(1);
    expect(refused.stderrLines).toHaveLength(1);
    expect(refused.stderr).toContain("maxBytes: must be at most 5368709120");
  });

  it("shows a clear page for an expired link and for a token that was never made", async () => {
    const created = await request(["--expires", "1s"]);
    const expiresAt = Date.parse(created.expiresAt);
    while (Date.now() <= expiresAt + 200) await new Promise((r) => setTimeout(r, 250));
    const expired = await open(created.url, 410);
    await expect(expired.locator("h1").textContent()).resolves.toBe("This link has expired");
    await expired.screenshot({ path: join(ARTIFACTS, "upload-page-expired.png") });
    await expired.close();
    const bogus = await open(`${proxy.url}/u/${"x".repeat(43)}`, 404);
    await expect(bogus.locator("h1").textContent()).resolves.toBe("This link is not valid");
    await bogus.close();
  });

  it("refuses a file over --max-bytes in the page and by curl, storing nothing", async () => {
    const created = await request(["--max-bytes", "1M"]);
    const big = randomBytes(2 * 1024 * 1024);
    const path = join(dir, "too-big.bin");
    await writeFile(path, big);
    const page = await open(created.url);
    const before = proxy.requests.length;
    await page.setInputFiles("#file", path);
    // A locator, not waitForFunction: the page's CSP forbids evaluating strings as script.
    await page.locator("#status", { hasText: /^This file is/ }).waitFor();
    await expect(page.locator("#status").textContent()).resolves.toBe(
      "This file is 2.0 MiB; this link takes files up to 1.0 MiB. Pick a smaller file.",
    );
    expect(proxy.requests.slice(before)).toEqual([]);
    await page.close();

    const refused = await curl(["-T", path, created.url]);
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body)).toEqual({
      error: {
        code: "payload_too_large",
        message: `the file is ${big.byteLength} bytes; this upload link takes at most 1048576 bytes`,
      },
    });
    expect((await pull()).size).toBe(0);
    // Still open: the refusal used nothing up.
    await (await open(created.url)).close();
  });

  it("takes a file from curl -T, and a chunked one from curl -T -", async () => {
    const bytes = randomBytes(3_000_000);
    const path = join(dir, "from-curl.csv");
    await writeFile(path, bytes);
    const first = await request(["--name", "from-curl.csv"]);
    const stored = await curl(["-T", path, first.url]);
    expect(stored.status).toBe(201);
    expect(JSON.parse(stored.body)).toEqual({
      name: "from-curl.csv",
      size: bytes.byteLength,
      sha256: sha256(bytes),
    });
    const second = await request();
    const streamed = await curl(["-T", "-", `${second.url}?name=streamed.csv`], bytes);
    expect(streamed.status).toBe(201);
    expect(JSON.parse(streamed.body)).toMatchObject({
      name: "streamed.csv",
      sha256: sha256(bytes),
    });

    const pulled = await pull();
    expect([...pulled.keys()].sort()).toEqual(["from-curl.csv", "streamed.csv"]);
    for (const file of pulled.values()) expect(sha256(file)).toBe(sha256(bytes));
    const again = await curl(["-T", path, first.url]);
    expect(again.status).toBe(410);
  });
});
