import { describe, expect, it } from "vitest";
import { backends } from "../support/backends";
import { ADMIN_TOKEN, errorOf, ORIGIN } from "../support/relay-client";
import { sha256Base64, uploadLinkHarness } from "./upload-requests-harness";

/** Upload links: minting one, and the page a person opens. */
for (const backend of backends()) {
  // Megabytes through the local stores on a busy machine: generous timeouts.
  describe(`upload links on ${backend.name}`, { timeout: 120_000 }, () => {
    const { client, config, createRequest, requestState } = uploadLinkHarness(backend);

    describe("POST /v1/requests", () => {
      it("mints a single-use link with the relay's defaults", async () => {
        const { token } = await client.mintSession({ ttlSeconds: 30 * 86_400 });
        const before = Date.now();
        const created = await createRequest(token);
        expect(created.url).toMatch(new RegExp(`^${ORIGIN}/u/[A-Za-z0-9_-]{43}$`));
        expect(created.requestId).toMatch(/^req_[A-Za-z0-9_-]{22}$/);
        expect(created.name).toBeNull();
        expect(created.maxBytes).toBe(config.maxFileBytes);
        const expires = Date.parse(created.expiresAt);
        expect(expires).toBeGreaterThanOrEqual(before + config.linkTtlSeconds * 1000);
        expect(expires).toBeLessThanOrEqual(Date.now() + config.linkTtlSeconds * 1000);
        expect(await requestState(token, created.requestId)).toEqual({
          requestId: created.requestId,
          status: "open",
          name: null,
          maxBytes: config.maxFileBytes,
          expiresAt: created.expiresAt,
        });
      });

      it("never lets a link outlive its session", async () => {
        const session = (await client.mintSession({ ttlSeconds: 60 })) as {
          token: string;
          expiresAt?: string;
        };
        const created = await createRequest(session.token, { ttlSeconds: 86_400, name: "a.csv" });
        expect(Date.parse(created.expiresAt)).toBe(Date.parse(session.expiresAt!));
        expect(created.name).toBe("a.csv");
      });

      it.each([
        [
          { maxBytes: 5368709121 },
          "maxBytes: must be at most 5368709120 (MAX_FILE_BYTES, the largest file this relay takes)",
        ],
        [{ maxBytes: 0 }, "maxBytes: must be at least 1"],
        [{ maxBytes: 1.5 }, "maxBytes: must be a whole number"],
        [{ ttlSeconds: 0 }, "ttlSeconds: must be positive"],
        [{ name: "../x.pdf" }, "name: must not contain / or \\"],
        [{ name: "" }, "name: must not be empty"],
        [
          { name: "a\u202egpj.exe" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
        [
          { name: "a\u200bb.pdf" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
        [
          { name: "\ufeffa.pdf" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
        [
          { name: "a\u2060b.pdf" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
        [
          { name: "a\u{e0041}.pdf" },
          "name: must not contain control, bidi-override or invisible characters",
        ],
      ])("refuses %j with 400 invalid_request", async (body, message) => {
        const { token } = await client.mintSession();
        const response = await client.call("POST", "/v1/requests", { token, json: body });
        expect(await errorOf(response)).toEqual({ status: 400, code: "invalid_request", message });
      });

      it("refuses unknown fields, the operator and a missing token", async () => {
        const { token } = await client.mintSession();
        const unknown = await client.call("POST", "/v1/requests", { token, json: { to: "x" } });
        expect(await errorOf(unknown)).toMatchObject({ status: 400, code: "invalid_request" });
        const operator = await client.call("POST", "/v1/requests", {
          token: ADMIN_TOKEN,
          json: {},
        });
        expect(await errorOf(operator)).toEqual({
          status: 403,
          code: "forbidden",
          message: "this route is for sandboxes",
        });
        const anonymous = await client.call("POST", "/v1/requests", { json: {} });
        expect(await errorOf(anonymous)).toMatchObject({ status: 401, code: "unauthorized" });
      });
    });

    describe("GET /u/:token", () => {
      it("shows what is asked for, escaped, under a CSP that allows one script by hash", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token, { name: "<script>q3.csv", maxBytes: 2_000_000 });
        const response = await client.fetch(created.url);
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
        const csp = response.headers.get("content-security-policy") ?? "";
        expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/]{43}='/);
        expect(csp).toContain("connect-src 'self'");
        expect(csp).toContain("default-src 'none'");
        expect(csp).not.toContain("unsafe-inline");
        const page = await response.text();
        expect(page).toContain("&lt;script&gt;q3.csv");
        expect(page).not.toContain("<script>q3");
        expect(page).toContain('type="file"');
        expect(page).toContain("1.9 MiB");
        expect(page).not.toMatch(/\son[a-z]+=/i);
        // The hashes in the CSP are those of the inline script and styles, byte for byte.
        const inline = async (tag: string) => {
          const found = [...page.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, "g"))];
          return Promise.all(found.map(async ([, text]) => sha256Base64(text!)));
        };
        const [script] = await inline("script");
        expect(csp).toContain(`script-src 'sha256-${script}'`);
        expect(csp).toContain(
          `style-src ${(await inline("style")).map((h) => `'sha256-${h}'`).join(" ")}`,
        );
      });

      it("answers 404 with a page for a token the relay never made", async () => {
        const response = await client.fetch(`${ORIGIN}/u/${"A".repeat(43)}`);
        expect(response.status).toBe(404);
        expect(await response.text()).toContain("This link is not valid");
        const short = await client.fetch(`${ORIGIN}/u/abc`);
        expect(short.status).toBe(404);
      });
    });
  });
}
