import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SHIM_VERSION } from "../../src/shim/bundle.generated";
import { RelayClient } from "../support/relay-client";

const client = new RelayClient(env);
const INSTALL =
  "curl -fsSL http://relay.test/shim/airlock.mjs -o /usr/local/bin/airlock && chmod +x /usr/local/bin/airlock";

describe("GET /", () => {
  it("answers a browser with a small page naming the docs, /healthz and the shim install", async () => {
    const response = await client.call("GET", "/", { headers: { accept: "text/html,*/*;q=0.8" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=UTF-8");
    expect(response.headers.get("content-security-policy")).toBe(
      "default-src 'none'; style-src 'unsafe-inline'",
    );
    expect(response.headers.get("vary")).toBe("Accept");
    const page = await response.text();
    expect(page).toContain("<title>Airlock relay</title>");
    expect(page).toContain("<code>README.md</code>, <code>docs/api.md</code>");
    expect(page).toContain('<a href="/healthz">/healthz</a>');
    expect(page).toContain(`<pre>${INSTALL.replace("&&", "&amp;&amp;")}</pre>`);
    expect(page).toContain(`(v${SHIM_VERSION})`);
    expect(page).not.toContain("<script");
  });

  it("gives curl (Accept: */*) the page too", async () => {
    const response = await client.call("GET", "/", { headers: { accept: "*/*" } });
    expect(response.headers.get("content-type")).toBe("text/html; charset=UTF-8");
  });

  it("answers a JSON client with JSON", async () => {
    const response = await client.call("GET", "/", { headers: { accept: "application/json" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toEqual({
      name: "airlock",
      about: expect.stringMatching(/^An Airlock relay: /) as unknown,
      docs: ["README.md", "docs/api.md", "docs/agent-integration.md"],
      health: "/healthz",
      shim: { url: "/shim/airlock.mjs", version: SHIM_VERSION, install: INSTALL },
    });
  });
});
