import { afterEach, describe, expect, it, vi } from "vitest";
import { readConfig } from "../../src/config";
import { createBlobStore } from "../../src/storage";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";

/**
 * The S3 store sends a request again when S3 asks for it (500, 503) or the connection fails,
 * as long as its body is in hand; the strict S3 server answers the attempt that goes through.
 */
describe("S3 store retries", () => {
  const backend = backends().find((b) => b.name === "s3")!;
  const store = () => createBlobStore(readConfig(backend.env), backend.env);
  const key = () => `retry/${crypto.randomUUID()}`;
  const realFetch = globalThis.fetch;

  /** Fails the first `failures.length` store requests as listed, then lets them through. */
  function failFirst(failures: Array<"reset" | 500 | 503>) {
    const seen: string[] = [];
    const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const request = new Request(input, init);
      seen.push(request.method);
      const failure = failures[seen.length - 1];
      if (failure === "reset") throw new TypeError("Network connection lost.");
      if (failure !== undefined) {
        await request.body?.cancel();
        const code = failure === 503 ? "SlowDown" : "InternalError";
        return new Response(`<Error><Code>${code}</Code></Error>`, { status: failure });
      }
      return realFetch(input, init);
    });
    return { seen, spy };
  }

  afterEach(() => vi.restoreAllMocks());

  async function bytesAt(k: string): Promise<string | null> {
    const got = await store().get(k);
    return got && sha256Hex(new Uint8Array(await new Response(got.body).arrayBuffer()));
  }

  it("stores bytes in hand after a reset connection and a SlowDown", async () => {
    const bytes = randomBytes(20_000);
    const k = key();
    const { seen } = failFirst(["reset", 503]);
    await store().put(k, bytes, { size: bytes.byteLength, sha256Hex: await sha256Hex(bytes) });
    expect(seen).toEqual(["PUT", "PUT", "PUT"]);
    vi.restoreAllMocks();
    expect(await bytesAt(k)).toBe(await sha256Hex(bytes));
  });

  it("reads after an InternalError", async () => {
    const bytes = randomBytes(3000);
    const k = key();
    await store().put(k, bytes, { size: bytes.byteLength, sha256Hex: await sha256Hex(bytes) });
    const { seen } = failFirst([500]);
    expect(await bytesAt(k)).toBe(await sha256Hex(bytes));
    expect(seen).toEqual(["GET", "GET"]);
  });

  it("gives up after three attempts, and nothing is stored", async () => {
    const bytes = randomBytes(1000);
    const k = key();
    const { seen } = failFirst([500, 500, 500]);
    await expect(
      store().put(k, bytes, { size: bytes.byteLength, sha256Hex: await sha256Hex(bytes) }),
    ).rejects.toThrow(`S3 PUT ${k} failed: 500 InternalError`);
    expect(seen).toHaveLength(3);
    vi.restoreAllMocks();
    expect(await store().head(k)).toBeNull();
  });

  it("never sends a streamed body twice", async () => {
    const bytes = randomBytes(1000);
    const k = key();
    const { seen } = failFirst(["reset"]);
    const body = new Blob([bytes]).stream();
    await expect(store().put(k, body, { size: bytes.byteLength })).rejects.toThrow(
      "Network connection lost.",
    );
    expect(seen).toEqual(["PUT"]);
    vi.restoreAllMocks();
    expect(await store().head(k)).toBeNull();
  });

  it("answers S3's other refusals at once", async () => {
    const { seen } = failFirst([]);
    expect(await store().head(key())).toBeNull();
    expect(seen).toEqual(["HEAD"]);
  });
});
