import { Hono } from "hono";
import { accepts } from "hono/accepts";
import { html } from "hono/html";
import type { AppEnv } from "../app-env";
import { SHIM_VERSION } from "../shim/bundle.generated";

const ABOUT =
  "An Airlock relay: it moves files between AI-agent sandboxes and the people they work for, " +
  "over plain HTTPS, with expiring share links.";
const DOCS = ["README.md", "docs/api.md", "docs/agent-integration.md"];

/** The one-line shim install, for this relay's own address. */
const installLine = (origin: string) =>
  `curl -fsSL ${origin}/shim/airlock.mjs -o /usr/local/bin/airlock && chmod +x /usr/local/bin/airlock`;

/** `GET /`: what this is and where its docs are, as a small page or (for JSON clients) JSON. */
export const home = new Hono<AppEnv>().get("/", (c) => {
  const { origin } = new URL(c.req.url);
  c.header("vary", "Accept");
  const type = accepts(c, {
    header: "Accept",
    supports: ["text/html", "application/json"],
    default: "text/html",
  });
  if (type === "application/json") {
    return c.json({
      name: "airlock",
      about: ABOUT,
      docs: DOCS,
      health: "/healthz",
      shim: { url: "/shim/airlock.mjs", version: SHIM_VERSION, install: installLine(origin) },
    });
  }
  c.header("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'");
  c.header("x-content-type-options", "nosniff");
  c.header("referrer-policy", "no-referrer");
  return c.html(
    html`<!doctype html>
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>Airlock relay</title>
          <style>
            body {
              font:
                16px/1.5 system-ui,
                sans-serif;
              max-width: 44rem;
              margin: 2rem auto;
              padding: 0 1rem;
            }
            pre {
              white-space: pre-wrap;
              word-break: break-all;
              background: #f4f4f4;
              padding: 0.75rem;
            }
          </style>
        </head>
        <body>
          <h1>Airlock relay</h1>
          <p>${ABOUT}</p>
          <p>
            Docs: ${DOCS.map((path, i) => html`${i > 0 ? ", " : ""}<code>${path}</code>`)} in the
            project's repository. Health: <a href="/healthz">/healthz</a>.
          </p>
          <p>Install the shim (v${SHIM_VERSION}) in a sandbox:</p>
          <pre>${installLine(origin)}</pre>
          <p>
            Then set <code>AIRLOCK_URL=${origin}</code> and <code>AIRLOCK_TOKEN</code> (a session
            token the operator mints with <code>POST /v1/sessions</code>) and run
            <code>airlock send &lt;file&gt;</code>.
          </p>
        </body>
      </html>`,
  );
});
