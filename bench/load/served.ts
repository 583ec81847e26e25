import { createHash } from "node:crypto";
import { get as httpGet } from "node:http";
import { fail } from "./report";
import type { Sandbox, Sent } from "./sandbox";

/** Reads of served bytes cut short (a Worker reload ends a response mid-body) and read again. */
let rereads = 0;
const REREADS_PER_FILE = 5;

/**
 * SHA-256 of what the relay serves the owner for a file, streamed. A read cut short by the
 * connection is read again from the start (`wrangler dev` cannot retry a response it has begun
 * when its Worker reloads); a complete answer with other bytes is never read again. node:http,
 * not fetch: fetch gives up on an answer whose headers take over 5 minutes, and the local runtime
 * may take that long while its queue reads ten large uploads back.
 */
async function servedSha256(sandbox: Sandbox, fileId: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await getSha256(`${sandbox.session.url}/v1/files/${fileId}/content`, {
        authorization: `Bearer ${sandbox.session.token}`,
      });
    } catch (error) {
      if (error instanceof RefusedGet || attempt >= REREADS_PER_FILE) throw error;
      rereads++;
      console.error(`GET content ${fileId} cut short (${String(error)}); reading it again`);
    }
  }
}

/** A GET answered with something other than 200: not read again. */
class RefusedGet extends Error {}

function getSha256(url: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = httpGet(url, { headers }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        return reject(new RefusedGet(`GET ${url}: ${response.statusCode}`));
      }
      const hash = createHash("sha256");
      response.on("data", (chunk: Buffer) => hash.update(chunk));
      response.once("error", reject);
      response.once("aborted", () => reject(new Error("connection closed mid-body")));
      response.once("end", () =>
        response.complete ? resolve(hash.digest("hex")) : reject(new Error("body cut short")),
      );
    });
    request.once("error", reject);
  });
}

export async function checkServed(samples: { file: Sent; fileId: string }[]): Promise<number> {
  let exact = 0;
  for (const { file, fileId } of samples) {
    try {
      const served = await servedSha256(file.sandbox, fileId);
      if (served === file.sha256) exact++;
      else fail(`${fileId} served ${served}, sent ${file.sha256}`);
    } catch (error) {
      fail(String(error));
    }
  }
  return exact;
}

/** How many reads of served bytes were cut short and read again so far. */
export const rereadCount = () => rereads;
