/** A text preview: the decoded start of a file. */
export interface TextSample {
  text: string;
  /** Bytes of the file the sample covers. */
  bytes: number;
  /** The file goes on past the sample. */
  truncated: boolean;
}

/**
 * Decodes the start of a file as text when it is text: declared so (`text/*`, JSON) or
 * valid UTF-8, and without NUL bytes either way (those are binary formats). A character
 * cut by the end of a truncated sample is dropped rather than called invalid.
 */
export function textSample(
  head: Uint8Array,
  contentType: string,
  truncated: boolean,
): TextSample | null {
  if (head.includes(0)) return null;
  try {
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(head, {
      stream: truncated,
    });
    return { text, bytes: head.byteLength, truncated };
  } catch {
    if (!declaredText(contentType)) return null;
    const text = new TextDecoder("utf-8").decode(head, { stream: truncated });
    return { text, bytes: head.byteLength, truncated };
  }
}

function declaredText(contentType: string): boolean {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return type.startsWith("text/") || type === "application/json" || type.endsWith("+json");
}

/**
 * Formats that run in a browser when rendered (HTML, SVG, XML with its stylesheets,
 * scripts): the page says it shows their source only.
 */
export function isActiveContent(name: string, contentType: string): boolean {
  return (
    /html|svg|xml|javascript|ecmascript/i.test(contentType) ||
    /\.(x?html?|svgz?|xml|xsl|xslt|m?js|mht|mhtml)$/i.test(name)
  );
}
