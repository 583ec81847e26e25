import { segment, Transport, type CallOptions, type FetchLike } from "./http.js";
import type {
  DeliveryRecord,
  DownloadOptions,
  FileRecord,
  SessionListFilesOptions,
} from "./types.js";

/** What both clients can do with the files they may see. */
export abstract class FileAccess {
  /** @internal */
  protected readonly transport: Transport;

  protected constructor(
    options: { url: string; fetch?: FetchLike | undefined; retries?: number | undefined },
    /** The one credential this client sends. */
    protected readonly credential: () => string,
  ) {
    this.transport = new Transport({
      url: options.url,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.retries !== undefined ? { retries: options.retries } : {}),
    });
  }

  /** The relay's base URL, without a trailing slash. */
  get url(): string {
    return this.transport.baseUrl;
  }

  /** One file's record, with a fresh share link (`url`). `404 file_not_found` if not visible. */
  async getFile(fileId: string, options: CallOptions = {}): Promise<FileRecord> {
    return this.transport.json<FileRecord>({
      method: "GET",
      path: `/v1/files/${segment(fileId)}`,
      token: this.credential(),
      signal: options.signal,
    });
  }

  /**
   * The file's original bytes, as a streaming `Response` (read `.body`, or `.arrayBuffer()`
   * for small files). Its `Content-Length` is the file's size and its `ETag` the quoted SHA-256.
   * On an s3 relay the bytes come straight from the store, through a short-lived URL the relay
   * redirects to (the token is not sent there).
   */
  async download(fileId: string, options: DownloadOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: "*/*" };
    if (options.range) {
      const { start, end } = options.range;
      headers.range = `bytes=${start}-${end ?? ""}`;
    }
    return this.transport.send({
      method: "GET",
      path: `/v1/files/${segment(fileId)}/content`,
      token: this.credential(),
      headers,
      signal: options.signal,
    });
  }

  /** Every delivery of the file to a chat, delivered and failed. */
  async listDeliveries(fileId: string, options: CallOptions = {}): Promise<DeliveryRecord[]> {
    const answer = await this.transport.json<{ deliveries: DeliveryRecord[] }>({
      method: "GET",
      path: `/v1/files/${segment(fileId)}/deliveries`,
      token: this.credential(),
      signal: options.signal,
    });
    return answer.deliveries;
  }

  /** @internal */
  protected async listFilesWith(
    sessionId: string | undefined,
    options: SessionListFilesOptions,
  ): Promise<FileRecord[]> {
    const answer = await this.transport.json<{ files: FileRecord[] }>({
      method: "GET",
      path: "/v1/files",
      token: this.credential(),
      query: { sessionId, origin: options.origin },
      signal: options.signal,
    });
    return answer.files;
  }
}
