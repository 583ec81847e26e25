// What a person receives when an agent sends a directory: the built shim sends it as a .tar.gz,
// and its share page offers each file and the whole as a .zip, on both backends. The zip passes
// Info-ZIP's `unzip -t` and extracts to the files sent; in Chromium the page is screenshotted
// on a phone and a desktop viewport, and a click on an entry downloads that file.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { ARTIFACTS, launchChromium } from "../support/chromium";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { sharedRelay } from "../support/shared-relay";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8";

/** The tree sent, path (under the sent folder's parent) → bytes. */
const FILES: Record<string, Buffer> = {
  "report/README.md": Buffer.from("# Quarterly report\n\nOpen data/values.bin with the viewer.\n"),
  "report/data/values.bin": randomBytes(1536 * 1024 + 7),
  "report/data/empty.txt": Buffer.alloc(0),
  "report/notes/résumé 日本.txt": Buffer.from("UTF-8 names survive the zip.\n"),
};

let dir: string;
beforeAll(async () => {
  prepareShim();
  dir = await mkdtemp(join(tmpdir(), "airlock-share-archive-"));
  for (const [path, bytes] of Object.entries(FILES)) {
    await mkdir(join(dir, path, ".."), { recursive: true });
    await writeFile(join(dir, path), bytes);
  }
  // Sent as a link, never followed, and never offered by the page.
  await symlink("../../../etc/passwd", join(dir, "report/data/passwd"));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Sends the folder with the built Node shim; returns its share URL once its page lists it. */
async function sendFolder(relay: RunningRelay): Promise<{ url: string; page: string }> {
  const { token } = await relay.mintSession();
  const sent = await runShim(["send", join(dir, "report"), "--json"], {
    env: relayEnv(relay.url, token),
  });
  expect(sent.code, sent.stderr).toBe(0);
  const { url } = JSON.parse(sent.stdout) as { url: string };
  // The listing is made by the verification queue's consumer, soon after the send.
  for (let i = 0; i < 40; i++) {
    const page = await (await fetch(url, { headers: { accept: BROWSER } })).text();
    if (page.includes('href="?zip=1"')) return { url, page };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the page of ${url} never offered a zip`);
}

/** The `?entry=N` link of `name` on the page. */
function entryLink(page: string, name: string): string {
  const match = new RegExp(`<a href="(\\?entry=\\d+)" download>${name}</a>`).exec(page);
  if (!match) throw new Error(`no link for ${name}`);
  return match[1]!;
}

/** `unzip -t` passes on `zip`, and it extracts to exactly the files sent (and nothing else). */
async function checkZip(zip: Uint8Array, label: string): Promise<void> {
  const path = join(dir, `${label}.zip`);
  await writeFile(path, zip);
  expect(execFileSync("unzip", ["-t", path], { encoding: "utf8" })).toContain(
    "No errors detected in compressed data",
  );
  const out = join(dir, `${label}-out`);
  execFileSync("unzip", ["-q", path, "-d", out]);
  for (const [name, bytes] of Object.entries(FILES))
    expect(sha256(await readFile(join(out, name))), name).toBe(sha256(bytes));
  expect(existsSync(join(out, "report/data/passwd"))).toBe(false);
}

const backends: Array<[string, () => Promise<{ relay: RunningRelay; stop(): Promise<void> }>]> = [
  ["r2", async () => ({ relay: sharedRelay(), stop: async () => {} })],
  [
    "s3",
    async () => {
      const s3: StrictS3 = await startStrictS3();
      const relay = await startRelay({ storage: "s3", vars: s3Vars(s3) });
      return { relay, stop: async () => void (await relay.stop(), await s3.stop()) };
    },
  ],
];

describe.each(backends)("a directory's share page on %s", (name, start) => {
  let backend: { relay: RunningRelay; stop(): Promise<void> };
  beforeAll(async () => {
    backend = await start();
  }, 120_000);
  afterAll(() => backend?.stop());

  it("downloads one entry byte-exact, and the whole as a zip unzip -t passes", async () => {
    const { url, page } = await sendFolder(backend.relay);
    expect(page).not.toContain("report/data/passwd</a>");
    const entry = await fetch(`${url}${entryLink(page, "report/data/values.bin")}`);
    expect(entry.status).toBe(200);
    expect(entry.headers.get("content-disposition")).toContain('filename="values.bin"');
    expect(sha256(new Uint8Array(await entry.arrayBuffer()))).toBe(
      sha256(FILES["report/data/values.bin"]!),
    );
    const zip = await fetch(`${url}?zip=1`);
    expect(zip.status).toBe(200);
    expect(zip.headers.get("content-disposition")).toContain('filename="report.zip"');
    await checkZip(new Uint8Array(await zip.arrayBuffer()), name);
  });
});

describe("a directory's share page in Chromium", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  it("fits a phone and a desktop, and a click on an entry downloads that file", async () => {
    const { url } = await sendFolder(sharedRelay());
    const context = await browser.newContext({
      acceptDownloads: true,
      viewport: { width: 1280, height: 800 },
    });
    const page = await context.newPage();
    expect((await page.goto(url))?.status()).toBe(200);
    await page.screenshot({
      path: join(ARTIFACTS, "share-page-folder-desktop.png"),
      fullPage: true,
    });

    const readme = page.getByRole("link", { name: "report/README.md" });
    const [download] = await Promise.all([page.waitForEvent("download"), readme.click()]);
    expect(download.suggestedFilename()).toBe("README.md");
    const saved = join(dir, "clicked-README.md");
    await download.saveAs(saved);
    expect(sha256(await readFile(saved))).toBe(sha256(FILES["report/README.md"]!));

    const [zip] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: /^Download as \.zip/ }).click(),
    ]);
    expect(zip.suggestedFilename()).toBe("report.zip");
    const zipPath = join(dir, "clicked.zip");
    await zip.saveAs(zipPath);
    await checkZip(await readFile(zipPath), "clicked");

    await page.setViewportSize({ width: 390, height: 844 });
    // Nothing is wider than the phone's screen: the page never scrolls sideways.
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    await page.screenshot({ path: join(ARTIFACTS, "share-page-folder-phone.png"), fullPage: true });
    await context.close();
  });
});
