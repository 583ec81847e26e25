import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { chromium, type Browser } from "playwright-core";

const CHROMIUM = "/usr/bin/chromium";

/** Where the browser tests leave their screenshots. */
export const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/", import.meta.url));

/** Debian's chromium, headless, under playwright-core (and the screenshots' directory made). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium with ` +
        "`apt-get update && apt-get install -y --no-install-recommends chromium` (.ci/run does this in CI)",
    );
  await mkdir(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--no-first-run",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
