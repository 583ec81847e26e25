import { humanSize } from "../../services/human-size";
import { escapeHtml } from "./html";
import type { Preview } from "./preview";
import { TAR_LIMITS, type TarListing } from "../../services/tar-listing";

/** Same-origin URLs relative to the page (`/d/<token>`), so the token is never repeated. */
const INLINE = "?inline=1";
const DOWNLOAD = "?download=1";

/** The preview section of the share page, as escaped HTML. */
export function renderPreview(preview: Preview, name: string): string {
  const label = escapeHtml(name);
  switch (preview.kind) {
    case "image":
      return section("Preview", `<img src="${INLINE}" alt="Preview of ${label}">`);
    case "pdf":
      return section(
        "Preview",
        `<iframe src="${INLINE}" title="PDF preview of ${label}"></iframe>
<p class="note">If the PDF does not show, <a href="${DOWNLOAD}" download>download it</a>.</p>`,
      );
    case "video":
      return section(
        "Preview",
        `<video controls preload="metadata" src="${INLINE}" aria-label="Video: ${label}">
<a href="${DOWNLOAD}" download>Download the video</a></video>`,
      );
    case "audio":
      return section(
        "Preview",
        `<audio controls preload="metadata" src="${INLINE}" aria-label="Audio: ${label}">
<a href="${DOWNLOAD}" download>Download the audio</a></audio>`,
      );
    case "text": {
      const notes: string[] = [];
      if (preview.asSource)
        notes.push(
          "Shown as source text: pages and images that can run code are never opened here.",
        );
      if (preview.sample.truncated)
        notes.push(
          `Truncated: this is the first ${humanSize(preview.sample.bytes)}. <a href="${DOWNLOAD}" download>Download the whole file</a> to see the rest.`,
        );
      return section(
        "Preview",
        `${notes.map((note) => `<p class="note">${note}</p>`).join("\n")}
<pre tabindex="0">${escapeHtml(preview.sample.text)}</pre>`,
      );
    }
    case "archive":
      return section("Contents", renderListing(preview.listing));
    case "unlisted":
      return section(
        "Contents",
        `<p class="note">${
          preview.pending
            ? "The list of files in this archive will show once the file has been checked."
            : "The list of files in this archive is not available."
        }</p>`,
      );
    case "withheld":
      return section(
        "Preview",
        `<p class="note">No preview: this link allows a set number of downloads, and a preview would use up the last one.</p>`,
      );
    case "empty":
      return section("Preview", `<p class="note">This file is empty.</p>`);
    case "none":
      return section("Preview", `<p class="note">No preview for this type of file.</p>`);
  }
}

function section(heading: string, body: string): string {
  return `<section aria-labelledby="preview-heading">
<h2 id="preview-heading">${heading}</h2>
${body}
</section>`;
}

const STOPPED = {
  entries: `Only the first ${TAR_LIMITS.entries} entries are listed.`,
  bytes: `Listing stopped after reading ${humanSize(TAR_LIMITS.bytes)} of the archive.`,
  corrupt: "The archive ends early or is damaged; these are the entries before that.",
};

function renderListing({ entries, stopped }: TarListing): string {
  const count = `${entries.length}${stopped ? "+" : ""} ${entries.length === 1 ? "entry" : "entries"}`;
  const rows = entries
    .map((entry) => {
      const type = entry.linkTarget
        ? `${entry.type} → ${escapeHtml(entry.linkTarget)}`
        : entry.type;
      const size = entry.type === "file" ? humanSize(entry.size) : "";
      return `<tr><td>${escapeHtml(entry.name)}</td><td class="num">${size}</td><td>${type}</td></tr>`;
    })
    .join("\n");
  return `<p class="note">Archive with ${count}.${stopped ? ` ${STOPPED[stopped]}` : ""}</p>
<table>
<thead><tr><th scope="col">Name</th><th scope="col" class="num">Size</th><th scope="col">Type</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`;
}
