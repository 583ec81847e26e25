/**
 * A multipart/form-data body (RFC 7578) whose file part streams from storage, with its
 * exact length known up front so it goes out with Content-Length rather than chunked
 * and a large file is never held in memory.
 */
export interface StreamedFilePart {
  field: string;
  filename: string;
  contentType: string;
  size: number;
  stream: ReadableStream<Uint8Array>;
}

export function multipartBody(
  fields: Record<string, string>,
  file: StreamedFilePart,
): { body: ReadableStream<Uint8Array>; contentType: string; length: number } {
  const boundary = `airlock-${crypto.randomUUID()}`;
  const encoder = new TextEncoder();
  const quoted = (value: string) => value.replace(/["\\\r\n]/g, (c) => encodeURIComponent(c));
  let head = "";
  for (const [name, value] of Object.entries(fields)) {
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(name)}"\r\n\r\n${value}\r\n`;
  }
  head +=
    `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(file.field)}"; filename="${quoted(file.filename)}"\r\n` +
    `Content-Type: ${file.contentType}\r\n\r\n`;
  const prefix = encoder.encode(head);
  const suffix = encoder.encode(`\r\n--${boundary}--\r\n`);
  const length = prefix.byteLength + file.size + suffix.byteLength;

  const { readable, writable } = new FixedLengthStream(length);
  (async () => {
    const writer = writable.getWriter();
    await writer.write(prefix);
    const reader = file.stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      await writer.write(value);
    }
    await writer.write(suffix);
    await writer.close();
  })().catch((error: unknown) => writable.abort(error).catch(() => {}));
  return { body: readable, contentType: `multipart/form-data; boundary=${boundary}`, length };
}
