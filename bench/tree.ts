/**
 * A generated directory of many small text files, like a source checkout: the case `airlock send
 * <dir>` is measured on. Deterministic (a seeded PRNG picks every size, name and line), so every
 * run of the benchmark packs the same tree; `fresh()` rewrites one file's first line so that no
 * send can dedup it.
 */
import { randomBytes } from "node:crypto";
import { mkdir, open, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { BenchFile } from "./corpus";

/** A generated tree: `path` is the directory, `size` the total bytes of its files. */
export interface BenchTree extends BenchFile {
  files: number;
  dirs: number;
  /** The smallest and largest file, in bytes. */
  minFile: number;
  maxFile: number;
}

const MIN_FILE = 200;
const MAX_FILE = 8 * 1024;
/** Files per leaf directory, about; leaf directories sit 1 to 3 levels deep. */
const PER_DIR = 40;
/** Every file starts with this fixed-width line; `fresh()` rewrites its nonce in one of them. */
const header = (nonce: string) => `// airlock bench tree ${nonce}\n`;
const ZERO_NONCE = "0".repeat(16);

/** mulberry32: a small seeded PRNG, enough for reproducible sizes and text. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "request response buffer stream upload file path size hash digest token session relay " +
  "store share link record error retry status header value count index name entry parent " +
  "child config option result archive chunk offset length encode decode parse format check " +
  "write read open close start end first last next user agent sandbox channel message"
).split(" ");
const EXTENSIONS = [".ts", ".ts", ".ts", ".js", ".json", ".md", ".txt", ".css"];

/** Source-like lines: identifiers, keywords, comments and indentation from a small vocabulary. */
function lineMaker(random: () => number): () => string {
  const word = () => WORDS[Math.floor(random() * WORDS.length)]!;
  const ident = () => {
    const first = word();
    const second = word();
    return first + second[0]!.toUpperCase() + second.slice(1);
  };
  const indent = () => "  ".repeat(Math.floor(random() * 4));
  const shapes: (() => string)[] = [
    () => `${indent()}const ${ident()} = ${ident()}(${word()}, ${Math.floor(random() * 1000)});`,
    () => `${indent()}if (${ident()}.${word()} === undefined) return ${word()};`,
    () => `${indent()}// ${word()} the ${word()} before the ${word()} ${word()}s`,
    () => `export function ${ident()}(${word()}: string, ${word()}: number): ${ident()} {`,
    () => `${indent()}await this.${ident()}({ ${word()}, ${word()}: ${ident()} });`,
    () => `${indent()}}`,
    () => `import { ${ident()}, ${ident()} } from "./${word()}-${word()}";`,
    () => "",
  ];
  return () => shapes[Math.floor(random() * shapes.length)]!();
}

/** One file's bytes: the header line, then source-like lines, cut to exactly `size` bytes. */
function fileText(size: number, nextLine: () => string): string {
  let text = header(ZERO_NONCE);
  while (text.length < size) text += nextLine() + "\n";
  return text.slice(0, size);
}

/**
 * Writes `files` files of 200 B – 8 KiB (log-uniform, so most are small, as in a source tree) into
 * `<parent>/<name>/`, in leaf directories 1–3 levels deep, `PER_DIR` files each, about.
 */
export async function createTree(parent: string, name: string, files: number): Promise<BenchTree> {
  const root = join(parent, name);
  const random = prng(0x5eed + files);
  const nextLine = lineMaker(random);
  const leaves: string[] = [];
  for (let leaf = 0; leaf * PER_DIR < files; leaf++) {
    const depth = 1 + Math.floor(random() * 3);
    const parts = [`pkg-${leaf % 17}`, `mod-${leaf % 7}`, `part-${leaf}`].slice(0, depth - 1);
    leaves.push(join(root, ...parts, `dir-${leaf}`));
  }
  const dirs = new Set<string>();
  let size = 0;
  let minFile = Infinity;
  let maxFile = 0;
  const paths: string[] = [];
  for (let i = 0; i < files; i++) {
    const dir = leaves[Math.floor(i / PER_DIR)]!;
    if (!dirs.has(dir)) {
      await mkdir(dir, { recursive: true });
      dirs.add(dir);
    }
    const bytes = Math.round(MIN_FILE * (MAX_FILE / MIN_FILE) ** random());
    const ext = EXTENSIONS[Math.floor(random() * EXTENSIONS.length)]!;
    const path = join(dir, `${WORDS[i % WORDS.length]}-${i}${ext}`);
    await writeFile(path, fileText(bytes, nextLine), "latin1");
    paths.push(path);
    size += bytes;
    minFile = Math.min(minFile, bytes);
    maxFile = Math.max(maxFile, bytes);
  }
  let run = 0;
  return {
    kind: "text",
    path: root,
    size,
    files,
    dirs: new Set([...dirs].flatMap((dir) => ancestors(root, dir))).size,
    minFile,
    maxFile,
    // A different file each run, its first line only: same size, one file of unseen content.
    fresh: () => rewriteHeader(paths[(run++ * 7919) % paths.length]!),
    remove: () => rm(root, { recursive: true, force: true }),
  };
}

/** `dir` and every directory between it and `root` (exclusive). */
function ancestors(root: string, dir: string): string[] {
  const out: string[] = [];
  for (let at = dir; at.length > root.length; at = at.slice(0, at.lastIndexOf("/"))) out.push(at);
  return out;
}

async function rewriteHeader(path: string): Promise<void> {
  const head = Buffer.from(header(randomBytes(8).toString("hex")), "latin1");
  const handle = await open(path, "r+");
  try {
    await handle.write(head, 0, head.length, 0);
  } finally {
    await handle.close();
  }
}
