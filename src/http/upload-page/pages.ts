import { html } from "hono/html";
import type { UploadRequest } from "../../db/upload-requests";
import type { AppError } from "../../errors";
import { MAX_PARTS, MIN_PART_BYTES } from "../../part-plan";
import { humanSize } from "../../services/human-size";
import { curlCommand } from "../../services/upload-links/curl-command";
import { uploadDocument } from "./document";

/**
 * The page a person opens from an upload link (`linkUrl`): what is asked for, a file picker,
 * progress, and the curl command that does the same from a terminal.
 */
export async function uploadPage(request: UploadRequest, linkUrl: string): Promise<Response> {
  const expires = new Date(Math.floor(request.expiresAt / 1000) * 1000).toISOString();
  const shown = expires.replace("T", " ").replace(".000Z", " UTC");
  const body = await html`<h1>Send a file</h1>
    <p>
      ${request.name === null ? "You were asked for a file." : html`You were asked for <strong>${request.name}</strong>.`}
      It goes only to whoever sent you this link; the link takes one file.
    </p>
    <dl>
      <dt>Largest file</dt>
      <dd>${humanSize(request.maxBytes)}</dd>
      <dt>Link expires</dt>
      <dd><time datetime="${expires}">${shown}</time></dd>
    </dl>
    <div id="drop" class="drop">
      <label for="file">Choose a file</label>
      <input id="file" type="file" />
      <span class="note">or drop it here</span>
    </div>
    <progress id="progress" max="1" value="0" hidden></progress>
    <p id="status" role="status" aria-live="polite"></p>
    <p>From a terminal (the file keeps its name):</p>
    <pre id="curl-command">${curlCommand(linkUrl)}</pre>
    <div
      id="upload-settings"
      hidden
      data-max-bytes="${request.maxBytes}"
      data-min-part-bytes="${MIN_PART_BYTES}"
      data-max-parts="${MAX_PARTS}"
    ></div>`;
  return uploadDocument(200, "Send a file · Airlock", String(body), true);
}

const ERROR_PAGES: Partial<Record<string, { title: string; text: string }>> = {
  not_found: {
    title: "This link is not valid",
    text: "The link is incomplete or was changed. Ask for the link again.",
  },
  link_exhausted: {
    title: "This link has been used",
    text: "It took one file already. If you need to send another, ask for a new link.",
  },
  link_expired: {
    title: "This link has expired",
    text: "Upload links stop working after a while. Ask whoever sent it for a new link.",
  },
};

/** The page for a link that cannot take a file: not valid (404), or used or expired (410). */
export async function linkErrorPage(error: AppError): Promise<Response> {
  const page = ERROR_PAGES[error.code] ?? { title: "Something went wrong", text: error.message };
  const status = error.status === 404 ? 404 : 410;
  const detail = error.code === "link_expired" ? error.message : null;
  const body = await html`<h1>${page.title}</h1>
    <p>${page.text}</p>
    ${detail ? html`<p class="note">${detail}.</p>` : ""}`;
  return uploadDocument(status, `${page.title} · Airlock`, String(body), false);
}
