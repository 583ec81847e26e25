import { html } from "hono/html";
import { writtenOut } from "../../names";
import { UNTABLED_INFLATE_BUDGET } from "../../services/original-bytes";
import { humanSize } from "../../services/human-size";
import { lines, type Html } from "./html";
import type { Preview } from "./preview";
import { TAR_LIMITS, type TarListing } from "../../services/sharing/tar-listing";
import { zipName, type ArchiveOffer } from "../../services/sharing/archive-offer";

/** Same-origin URLs relative to the page (`/d/<token>`), so the token is never repeated. */
const INLINE = "?inline=1";
const DOWNLOAD = "?download=1";

/** The preview section of the share page. */
export function renderPreview(preview: Preview, name: string): Html {
  switch (preview.kind) {
    case "image":
      // prettier-ignore
      return section("Preview", html`<img src="${INLINE}" alt="Preview of ${name}">`);
    case "pdf":
      // prettier-ignore
      return section("Preview", html`<iframe src="${INLINE}" title="PDF preview of ${name}"></iframe>
<p class="note">If the PDF does not show, <a href="${DOWNLOAD}" download>download it</a>.</p>`);
    case "video":
      // prettier-ignore
      return section("Preview", html`<video controls preload="metadata" src="${INLINE}" aria-label="Video: ${name}">
<a href="${DOWNLOAD}" download>Download the video</a></video>`);
    case "audio":
      // prettier-ignore
      return section("Preview", html`<audio controls preload="metadata" src="${INLINE}" aria-label="Audio: ${name}">
<a href="${DOWNLOAD}" download>Download the audio</a></audio>`);
    case "text": {
      const notes: Html[] = [];
      if (preview.asSource)
        notes.push(
          note("Shown as source text: pages and images that can run code are never opened here."),
        );
      if (preview.sample.truncated)
        // prettier-ignore
        notes.push(note(html`Truncated: this is the first ${humanSize(preview.sample.bytes)}. <a href="${DOWNLOAD}" download>Download the whole file</a> to see the rest.`));
      // prettier-ignore
      return section("Preview", html`${lines(notes)}
<pre tabindex="0">${preview.sample.text}</pre>`);
    }
    case "archive":
      return section("Contents", renderListing(preview.listing, preview.offer, name));
    case "unlisted":
      return section(
        "Contents",
        note(
          preview.pending
            ? "The list of files in this archive will show once the file has been checked."
            : "The list of files in this archive is not available.",
        ),
      );
    case "withheld":
      return section(
        "Preview",
        note(
          "No preview: this link allows a set number of downloads, and a preview would use up the last one.",
        ),
      );
    case "empty":
      return section("Preview", note("This file is empty."));
    case "none":
      return section("Preview", note("No preview for this type of file."));
  }
}

function note(text: string | Html): Html {
  // prettier-ignore
  return html`<p class="note">${text}</p>`;
}

function section(heading: string, body: Html): Html {
  // prettier-ignore
  return html`<section aria-labelledby="preview-heading">
<h2 id="preview-heading">${heading}</h2>
${body}
</section>`;
}

const STOPPED = {
  entries: `Only the first ${TAR_LIMITS.entries} entries are listed.`,
  bytes: `Listing stopped after reading ${humanSize(TAR_LIMITS.bytes)} of the archive.`,
  corrupt: "The archive ends early or is damaged; these are the entries before that.",
};

/**
 * The archive's entries; those offered alone link to `?entry=N` (the relay names the download),
 * and the whole is offered as a zip above the table when it can be.
 */
function renderListing(
  { entries, stopped }: TarListing,
  offer: ArchiveOffer | null,
  archiveName: string,
): Html {
  const count = `${entries.length}${stopped ? "+" : ""} ${entries.length === 1 ? "entry" : "entries"}`;
  const rows = entries.map((entry, index) => {
    const type = entry.linkTarget ? `${entry.type} → ${writtenOut(entry.linkTarget)}` : entry.type;
    const size = entry.type === "file" ? humanSize(entry.size) : "";
    // prettier-ignore
    const name = offer?.single.has(index) ? html`<a href="?entry=${index}" download>${writtenOut(entry.name)}</a>` : writtenOut(entry.name);
    // prettier-ignore
    return html`<tr><td>${name}</td><td class="num">${size}</td><td>${type}</td></tr>`;
  });
  // prettier-ignore
  const zip = offer?.zip ? html`<p><a class="button" href="?zip=1" download="${zipName(archiveName)}">Download as .zip (${humanSize(offer.zipLength)})</a></p>
` : "";
  const files = offer?.entries.filter((entry) => !entry.directory).length ?? 0;
  // prettier-ignore
  const alone = offer && offer.single.size < files ? html`<p class="note">Files that start more than ${humanSize(UNTABLED_INFLATE_BUDGET)} into the archive ${offer.zip ? "come in the .zip, not" : "cannot be downloaded"} one by one.</p>
` : "";
  // prettier-ignore
  return html`<p class="note">Archive with ${count}.${stopped ? ` ${STOPPED[stopped]}` : ""}</p>
${zip}${alone}<table>
<thead><tr><th scope="col">Name</th><th scope="col" class="num">Size</th><th scope="col">Type</th></tr></thead>
<tbody>
${lines(rows)}
</tbody>
</table>`;
}
