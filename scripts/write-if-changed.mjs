import { readFile, writeFile } from "node:fs/promises";

/**
 * Writes `text` to `path` only when it differs from what is there: every write under src/
 * reloads each `wrangler dev` running in this checkout, and a reload answers the uploads in
 * flight with 503.
 */
export async function writeIfChanged(path, text) {
  const current = await readFile(path, "utf8").catch(() => undefined);
  if (current !== text) await writeFile(path, text);
}
