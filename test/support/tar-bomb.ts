import { createGzip } from "node:zlib";

/** A 512-byte ustar header for one regular file of `size` bytes. */
export function tarHeader(name: string, size: number): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0);
  header.write("0000644\0", 100);
  header.write(`${size.toString(8).padStart(11, "0")}\0`, 124);
  header.write("00000000000\0", 136);
  header.write("        ", 148);
  header.write("0", 156);
  header.write("ustar\u000000", 257);
  const sum = header.reduce((total, byte) => total + byte, 0);
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  return header;
}

/** A .tar.gz of about 1 MB that inflates to 1 GiB: one entry, all zeros. */
export async function gzipBomb(): Promise<Buffer> {
  const gzip = createGzip({ level: 9 });
  const out: Buffer[] = [];
  gzip.on("data", (chunk: Buffer) => out.push(chunk));
  const done = new Promise((resolve) => gzip.on("end", resolve));
  const zeros = Buffer.alloc(1024 * 1024);
  gzip.write(tarHeader("zeros.bin", 1024 ** 3));
  for (let i = 0; i < 1024; i++)
    if (!gzip.write(zeros)) await new Promise((resolve) => gzip.once("drain", resolve));
  gzip.end();
  await done;
  return Buffer.concat(out);
}
