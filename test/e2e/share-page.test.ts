import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32, deflateSync, gzipSync } from "node:zlib";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareShim, runShim } from "../shim/run-shim";
import { ARTIFACTS, launchChromium } from "../support/chromium";
import { type RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** A width × height RGB PNG of a diagonal gradient, so a screenshot shows it decoded. */
function gradientPng(width: number, height: number): Buffer {
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const at = y * (width * 3 + 1) + 1 + x * 3;
      rows[at] = (x * 255) / width;
      rows[at + 1] = (y * 255) / height;
      rows[at + 2] = 160;
    }
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.byteLength);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A one-page PDF showing `text`, with a correct cross-reference table. */
function pdf(text: string): Buffer {
  const content = `BT /F1 24 Tf 40 70 Td (${text}) Tj ET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let out = "%PDF-1.4\n";
  const offsets = objects.map((body, i) => {
    const offset = out.length;
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
    return offset;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((offset) => `${String(offset).padStart(10, "0")} 00000 n \n`).join("");
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out);
}

/** A ustar archive of the given text files, gzipped. */
function tarGz(files: Record<string, string>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, text] of Object.entries(files)) {
    const header = Buffer.alloc(512);
    header.write(name, 0);
    header.write("0000644\0", 100);
    header.write(`${text.length.toString(8).padStart(11, "0")}\0`, 124);
    header.write("00000000000\0", 136);
    header.write("        ", 148);
    header.write("0", 156);
    header.write("ustar\u000000", 257);
    const sum = header.reduce((total, byte) => total + byte, 0);
    header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
    blocks.push(
      header,
      Buffer.alloc(Math.ceil(text.length / 512) * 512, 0).fill(text, 0, text.length),
    );
  }
  return gzipSync(Buffer.concat([...blocks, Buffer.alloc(1024)]));
}

describe("the share page in a real browser (Debian chromium under playwright-core)", () => {
  let relay: RunningRelay;
  let browser: Browser;
  let context: BrowserContext;
  let dir: string;
  let token: string;
  const cspErrors: string[] = [];

  beforeAll(async () => {
    prepareShim();
    dir = await mkdtemp(join(tmpdir(), "airlock-share-page-"));
    relay = sharedRelay();
    token = (await relay.mintSession()).token;
    browser = await launchChromium();
    context = await browser.newContext({
      acceptDownloads: true,
      viewport: { width: 1000, height: 800 },
    });
  });
  afterAll(async () => {
    await browser?.close();
    await relay?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Sends a file with the built shim, as an agent would, and returns its share URL. */
  async function send(name: string, bytes: Uint8Array): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, bytes);
    const result = await runShim(["send", path, "--json"], {
      env: { AIRLOCK_URL: relay.url, AIRLOCK_TOKEN: token },
    });
    expect(result.code, result.stderr).toBe(0);
    return (JSON.parse(result.stdout) as { url: string }).url;
  }

  async function open(url: string): Promise<Page> {
    const page = await context.newPage();
    page.on("console", (message) => {
      if (/Content.Security.Policy/i.test(message.text())) cspErrors.push(message.text());
    });
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);
    expect(response?.headers()["content-type"]).toBe("text/html; charset=utf-8");
    return page;
  }

  it("shows an image's name and size, and the image preview loads", async () => {
    const png = gradientPng(480, 270);
    const page = await open(await send("chart.png", png));
    await expect(page.locator("h1").textContent()).resolves.toBe("chart.png");
    await expect(page.locator("dl").textContent()).resolves.toContain(
      `${png.byteLength.toLocaleString("en-US")} bytes`,
    );
    const image = page.getByRole("img", { name: "Preview of chart.png" });
    await image.waitFor();
    // Page-side code as strings: this project's TypeScript has no DOM types.
    await page.waitForFunction('document.querySelector("main img").complete');
    expect(await page.evaluate('document.querySelector("main img").naturalWidth')).toBe(480);
    // The stylesheet is allowed by its CSP hash: the button is styled, nothing was blocked.
    const background = await page.evaluate(
      'getComputedStyle(document.querySelector("a.button")).backgroundColor',
    );
    expect(background).not.toBe("rgba(0, 0, 0, 0)");
    await page.screenshot({ path: join(ARTIFACTS, "share-page-image.png"), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(ARTIFACTS, "share-page-image-mobile.png"), fullPage: true });
    await page.close();
  });

  it("shows the start of a text file, escaped, and downloads its exact bytes", async () => {
    const lines = [
      "<b>first line</b> of the build log",
      ...Array.from({ length: 40 }, (_, i) => `step ${i}: ok`),
    ];
    const text = Buffer.from(`${lines.join("\n")}\n`);
    const page = await open(await send("build.log", text));
    const pre = page.locator("pre");
    expect((await pre.textContent())?.split("\n")[0]).toBe("<b>first line</b> of the build log");
    expect(await page.locator("pre b").count()).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, "share-page-text.png"), fullPage: true });

    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: /^Download/ }).click(),
    ]);
    expect(download.suggestedFilename()).toBe("build.log");
    const saved = join(dir, "downloaded-build.log");
    await download.saveAs(saved);
    expect(sha256(await readFile(saved))).toBe(sha256(text));
    await page.close();
  });

  it("downloads a binary file's exact bytes from the button", async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const page = await open(await send("model weights.bin", bytes));
    await expect(page.locator("main").textContent()).resolves.toContain(
      "No preview for this type of file.",
    );
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: /^Download/ }).click(),
    ]);
    const saved = join(dir, "downloaded.bin");
    await download.saveAs(saved);
    expect(sha256(await readFile(saved))).toBe(sha256(bytes));
    await page.close();
  });

  it("shows a PDF in the browser's own viewer, served inline from the relay", async () => {
    const url = await send("invoice.pdf", pdf("Hello from a PDF"));
    const page = await context.newPage();
    const inline = page.waitForResponse((response) => response.url().endsWith("?inline=1"));
    await page.goto(url);
    const response = await inline;
    expect(response.status()).toBe(200);
    expect(response.headers()["content-type"]).toBe("application/pdf");
    expect(response.headers()["content-disposition"]).toMatch(/^inline; /);
    await expect(page.locator('iframe[title="PDF preview of invoice.pdf"]').count()).resolves.toBe(
      1,
    );
    await page.waitForTimeout(1500); // the viewer draws the page after the response arrives
    await page.screenshot({ path: join(ARTIFACTS, "share-page-pdf.png"), fullPage: true });
    await page.close();
  });

  it("lists a .tar.gz and shows HTML as source, never rendered", async () => {
    const archiveUrl = await send(
      "site.tar.gz",
      tarGz({ "site/index.html": "<h1>hi</h1>", "site/app.js": "alert(1)" }),
    );
    // The listing is read once, by the verification queue's consumer, not by page views.
    const archive = await context.newPage();
    for (let i = 0; i < 30; i++) {
      await archive.goto(archiveUrl);
      if ((await archive.getByRole("cell", { name: "site/index.html" }).count()) === 1) break;
      await archive.waitForTimeout(500);
    }
    await expect(archive.getByRole("cell", { name: "site/index.html" }).count()).resolves.toBe(1);
    await archive.screenshot({ path: join(ARTIFACTS, "share-page-archive.png"), fullPage: true });
    await archive.close();

    const dialogs: string[] = [];
    const html = await open(
      await send("page.html", Buffer.from("<h2>Injected</h2><img src=x onerror=alert(1)>")),
    );
    html.on("dialog", (dialog) => void dialog.dismiss().then(() => dialogs.push(dialog.message())));
    await expect(html.locator("pre").textContent()).resolves.toBe(
      "<h2>Injected</h2><img src=x onerror=alert(1)>",
    );
    expect(await html.locator("h2", { hasText: "Injected" }).count()).toBe(0);
    await html.screenshot({ path: join(ARTIFACTS, "share-page-html-source.png"), fullPage: true });
    expect(dialogs).toEqual([]);
    await html.close();
  });

  it("opens a one-download link's page, then downloads the file from its button", async () => {
    const png = gradientPng(64, 64);
    const fileUrl = await send("once.png", png);
    const fileId = /\/d\/(fil_[\w-]+)\./.exec(fileUrl)![1]!;
    const minted = await fetch(`${relay.url}/v1/files/${fileId}/links`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ maxDownloads: 1 }),
    });
    const { url } = (await minted.json()) as { url: string };
    const page = await open(url);
    await expect(page.locator("main").textContent()).resolves.toContain("Downloads left1 of 1");
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: /^Download/ }).click(),
    ]);
    const saved = join(dir, "downloaded-once.png");
    await download.saveAs(saved);
    expect(sha256(await readFile(saved))).toBe(sha256(png));
    const again = await page.goto(url);
    expect(again?.status()).toBe(410);
    await page.close();
  });

  it("answers an expired or broken link with an HTML error page", async () => {
    const page = await context.newPage();
    const response = await page.goto(`${relay.url}/d/not-a-token`);
    expect(response?.status()).toBe(403);
    await expect(page.locator("h1").textContent()).resolves.toBe("This link is not valid");
    await page.screenshot({ path: join(ARTIFACTS, "share-page-error.png") });
    await page.close();
    expect(cspErrors).toEqual([]);
  });
});
