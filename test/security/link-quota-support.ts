import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import type { ApiBody } from "../support/api-call";
import type { RunningRelay } from "../support/relay";

/** Shared helpers of test/security/link-quota.test.ts. */

export const MiB = 1024 * 1024;
export const LEASE_SECONDS = 3;
export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
export const base64 = (hex: string) => Buffer.from(hex, "hex").toString("base64");

export async function errorOf(response: Response) {
  return { status: response.status, ...((await response.json()) as { error: object }).error };
}

/** How a chunked PUT that never ends came out: the relay's answer, or a cut connection. */
export type EndlessOutcome = { answer: { status: number; body: ApiBody } } | { cut: string };

/**
 * A chunked PUT as `curl -T - <link>` sends one, of a body that never ends: 64 KiB at a time
 * until the relay answers or cuts the connection (a relay that read on would never stop it).
 */
export function endlessPut(url: string): { outcome: Promise<EndlessOutcome>; stop(): void } {
  let done = false;
  let stop = () => {};
  const outcome = new Promise<EndlessOutcome>((resolve) => {
    const request = http.request(url, { method: "PUT", agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        done = true;
        request.end(); // The answer came: the body ends here, as curl's would.
        const text = Buffer.concat(chunks).toString("utf8");
        // `wrangler dev`'s own words when the worker cut the connection it forwarded on.
        if (text.startsWith("Your worker restarted mid-request")) resolve({ cut: text });
        else resolve({ answer: { status: response.statusCode ?? 0, body: jsonOrText(text) } });
      });
    });
    request.on("error", (error) => {
      done = true;
      resolve({ cut: String(error) });
    });
    // The relay logged its cut but neither an answer nor an error arrived (a proxy holding
    // the connection): the client gives up, as a person's curl would be stopped.
    stop = () => {
      if (done) return;
      done = true;
      request.destroy();
      resolve({ cut: "stopped by the test after the relay logged its cut" });
    };
    const trickle = () => {
      if (done) return;
      request.write(randomBytes(64 * 1024));
      setTimeout(trickle, 20);
    };
    trickle();
  });
  return { outcome, stop: () => stop() };
}

/** Waits for the relay to log `event` naming `id` (wrangler prints logs as they come). */
export async function loggedLine(relay: RunningRelay, event: string, id: string): Promise<string> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const line = relay
      .output()
      .split("\n")
      .find((l) => l.includes(`"event":"${event}"`) && l.includes(id));
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the relay never logged ${event} for ${id}:\n${relay.output().slice(-3000)}`);
}

/** The link page's part PUT, as the stranger's browser sends it. */
export const putPart = (url: string, uploadId: string, bytes: Uint8Array) =>
  fetch(`${url}/uploads/${uploadId}/parts/1`, {
    method: "PUT",
    body: bytes,
    headers: {
      "content-length": String(bytes.byteLength),
      "x-amz-checksum-sha256": base64(sha256(bytes)),
    },
  });

/** The JSON answer, or text that is not JSON as an error the test's expectation shows. */
function jsonOrText(text: string): ApiBody {
  try {
    return JSON.parse(text) as ApiBody;
  } catch {
    return { error: { code: "not_json", message: text.slice(0, 200) } };
  }
}
