import { randomBytes, randomFillSync } from "node:crypto";
import { open, rm } from "node:fs/promises";
import { join } from "node:path";
import { LogLines } from "./log-lines";

export type Kind = "random" | "text";

/** One generated test file; `fresh()` changes its first bytes so that no send can dedup it. */
export interface BenchFile {
  kind: Kind;
  path: string;
  size: number;
  /** Rewrites the start of the file in place (same size, same kind) to unseen content. */
  fresh(): Promise<void>;
  remove(): Promise<void>;
}

const WRITE_CHUNK = 1024 * 1024;
/** Text files start with this fixed-width line; `fresh()` rewrites its nonce. */
const textHeader = () => `# airlock bench sample ${randomBytes(8).toString("hex")}\n`;

/** Writes `size` bytes of `kind` to `dir`, streaming in 1 MiB chunks (flat memory at any size). */
export async function createFile(dir: string, kind: Kind, size: number): Promise<BenchFile> {
  const path = join(dir, `${kind}-${size}.${kind === "text" ? "log" : "bin"}`);
  const handle = await open(path, "w");
  try {
    if (kind === "random") await writeRandom(handle, size);
    else await writeText(handle, size);
  } finally {
    await handle.close();
  }
  return {
    kind,
    path,
    size,
    fresh: () => rewriteStart(path, kind),
    remove: () => rm(path, { force: true }),
  };
}

type Handle = Awaited<ReturnType<typeof open>>;

async function writeRandom(handle: Handle, size: number): Promise<void> {
  const chunk = Buffer.alloc(WRITE_CHUNK);
  for (let written = 0; written < size;) {
    const length = Math.min(WRITE_CHUNK, size - written);
    randomFillSync(chunk, 0, length);
    await handle.write(chunk, 0, length);
    written += length;
  }
}

async function writeText(handle: Handle, size: number): Promise<void> {
  const lines = new LogLines();
  let pending = textHeader();
  let written = 0;
  while (written < size) {
    while (pending.length < WRITE_CHUNK) pending += lines.next();
    const part = pending.slice(0, Math.min(WRITE_CHUNK, size - written));
    pending = pending.slice(part.length);
    await handle.write(Buffer.from(part, "latin1"));
    written += part.length;
  }
}

async function rewriteStart(path: string, kind: Kind): Promise<void> {
  const head = kind === "random" ? randomBytes(16) : Buffer.from(textHeader(), "latin1");
  const handle = await open(path, "r+");
  try {
    await handle.write(head, 0, head.length, 0);
  } finally {
    await handle.close();
  }
}
