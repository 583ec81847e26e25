import { describe, expect, it } from "vitest";
import { backends } from "../support/backends";
import { logText, randomBytes, sha256Hex } from "../support/bytes";
import { errorOf, RelayClient } from "../support/relay-client";
import { upload } from "../support/send";

const [r2, s3] = backends();
const storeHost = new URL(s3!.env.S3_ENDPOINT!).host;
const BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8";

function clientOn(env: NonNullable<typeof s3>["env"]) {
  const client = new RelayClient(env);
  return {
    client,
    async sent(bytes: Uint8Array, name: string, encoding: "identity" | "gzip" = "identity") {
      const { token } = await client.mintSession();
      return { token, ...(await upload(client, token, bytes, name, encoding)) };
    },
  };
}

const manual = (headers: Record<string, string> = {}): RequestInit => ({
  redirect: "manual",
  headers,
});

describe("share-link downloads on s3 redirect to the store", () => {
  const { client, sent } = clientOn(s3!.env);

  it("answers 307 to a short-lived presigned GET with the file's name and type", async () => {
    const bytes = randomBytes(300_000);
    const file = await sent(bytes, "résumé report.pdf");
    const relayed = await client.fetch(file.url, manual());
    expect(relayed.status).toBe(307);
    expect(relayed.headers.get("etag")).toBe(`"${file.sha256}"`);
    expect(relayed.headers.get("cache-control")).toBe("no-store");
    const location = new URL(relayed.headers.get("location")!);
    expect(location.host).toBe(storeHost);
    const expires = Number(location.searchParams.get("X-Amz-Expires"));
    expect(expires).toBeGreaterThan(0);
    expect(expires).toBeLessThanOrEqual(60);
    const disposition = `attachment; filename="r_sum_ report.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20report.pdf`;
    expect(location.searchParams.get("response-content-disposition")).toBe(disposition);

    const stored = await fetch(location);
    expect(stored.status).toBe(200);
    expect(stored.headers.get("content-disposition")).toBe(disposition);
    const head = await client.fetch(file.url, { method: "HEAD" });
    expect(location.searchParams.get("response-content-type")).toBe(
      head.headers.get("content-type"),
    );
    expect(stored.headers.get("content-type")).toBe(head.headers.get("content-type"));
    expect(await sha256Hex(await stored.arrayBuffer())).toBe(file.sha256);

    // The overrides are signed: a URL asking for another name is refused by the store.
    const tampered = new URL(location);
    tampered.searchParams.set("response-content-disposition", "inline");
    const refused = await fetch(tampered);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("<Code>SignatureDoesNotMatch</Code>");
  });

  it("signs a Range into the URL: the store serves that range and nothing else", async () => {
    const bytes = randomBytes(100_000);
    const file = await sent(bytes, "slice.bin");
    const relayed = await client.fetch(file.url, manual({ range: "bytes=1000-1999" }));
    expect(relayed.status).toBe(307);
    const location = relayed.headers.get("location")!;
    expect(new URL(location).searchParams.get("X-Amz-SignedHeaders")).toBe("host;range");
    const slice = await fetch(location, { headers: { range: "bytes=1000-1999" } });
    expect(slice.status).toBe(206);
    expect(new Uint8Array(await slice.arrayBuffer())).toEqual(bytes.subarray(1000, 2000));
    const whole = await fetch(location);
    expect(whole.status).toBe(403);
    await whole.body?.cancel();

    // A Range the store might read otherwise (spaces, other case) is served by the relay.
    for (const odd of ["bytes= 1000 - 1999", "BYTES=1000-1999"]) {
      const relayedOdd = await client.fetch(file.url, manual({ range: odd }));
      expect(relayedOdd.status).toBe(206);
      expect(new Uint8Array(await relayedOdd.arrayBuffer())).toEqual(bytes.subarray(1000, 2000));
    }
  });

  it("counts a maxDownloads: 1 link at the redirect: the second download is 410", async () => {
    const bytes = randomBytes(50_000);
    const file = await sent(bytes, "once.bin");
    const minted = await client.call("POST", `/v1/files/${file.fileId}/links`, {
      token: file.token,
      json: { maxDownloads: 1 },
    });
    const { url } = (await minted.json()) as { url: string };
    const first = await client.fetch(`${url}?download=1`, manual());
    expect(first.status).toBe(307);
    const second = await client.fetch(url, manual());
    expect(second.status).toBe(410);
    expect(await errorOf(second)).toMatchObject({ code: "link_exhausted" });
    // The URL handed out still works for its few seconds: the bytes were counted already.
    const stored = await fetch(first.headers.get("location")!);
    expect(await sha256Hex(await stored.arrayBuffer())).toBe(file.sha256);
  });

  it("keeps the page, HEAD and gzip-stored files on the relay", async () => {
    const plain = await sent(randomBytes(20_000), "plain.bin");
    const head = await client.fetch(plain.url, { method: "HEAD", redirect: "manual" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("20000");
    const page = await client.fetch(plain.url, manual({ accept: BROWSER }));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    await page.body?.cancel();

    const text = logText(20_000);
    const gz = await sent(text, "log.txt", "gzip");
    const served = await client.fetch(gz.url, manual());
    expect(served.status).toBe(200);
    expect(served.headers.get("location")).toBeNull();
    expect(await sha256Hex(await served.arrayBuffer())).toBe(await sha256Hex(text));
  });
});

describe("share-link downloads on r2 stay on the relay", () => {
  const { client, sent } = clientOn(r2!.env);
  it("serves the bytes itself", async () => {
    const file = await sent(randomBytes(10_000), "r2.bin");
    const served = await client.fetch(file.url, manual());
    expect(served.status).toBe(200);
    expect(await sha256Hex(await served.arrayBuffer())).toBe(file.sha256);
  });
});
