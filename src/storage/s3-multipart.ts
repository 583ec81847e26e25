import { XMLBuilder, XMLParser } from "fast-xml-parser";
import type { StoredPart } from "../db/upload-parts";
import { base64ToHex, hexToBase64 } from "../encoding";
import { MultipartUploadGoneError, type MultipartTarget } from "./blob-store";
import { type S3Http, s3ErrorCode } from "./s3-http";

const xml = new XMLParser({
  ignoreAttributes: true,
  parseTagValue: false,
  // Character references too (`&#34;`), not only the five named entities: ETags carry quotes.
  htmlEntities: true,
  isArray: (name) => name === "Part",
});

/** Request bodies: element text escaped by the builder (an ETag's quotes as `&quot;`). */
const xmlBody = new XMLBuilder({ processEntities: true });

/** S3's multipart API (CreateMultipartUpload … CompleteMultipartUpload) over signed fetch. */
export class S3Multipart {
  constructor(private readonly http: S3Http) {}

  /** Parts are checksummed with SHA-256, so every UploadPart must carry its checksum. */
  async create(key: string): Promise<string> {
    const response = await this.http.send(
      "POST",
      key,
      { "x-amz-checksum-algorithm": "SHA256" },
      null,
      { uploads: "" },
    );
    const result = await this.parse(response, `CreateMultipartUpload ${key}`);
    const uploadId = result.InitiateMultipartUploadResult?.UploadId;
    if (typeof uploadId !== "string" || uploadId === "")
      throw new Error(`S3 CreateMultipartUpload ${key} answered without an UploadId`);
    return uploadId;
  }

  /** Query of an UploadPart request. */
  partQuery(target: MultipartTarget, partNumber: number): Record<string, string> {
    return { partNumber: String(partNumber), uploadId: target.storeUploadId };
  }

  /** Every part the store holds, following ListParts' pages. */
  async list(target: MultipartTarget): Promise<StoredPart[]> {
    const parts: StoredPart[] = [];
    let marker = "0";
    for (;;) {
      const response = await this.http.send("GET", target.key, {}, null, {
        uploadId: target.storeUploadId,
        "max-parts": "1000",
        "part-number-marker": marker,
      });
      const result = (await this.parse(response, `ListParts ${target.key}`)).ListPartsResult ?? {};
      for (const part of (result.Part ?? []) as S3Part[]) {
        parts.push({
          partNumber: Number(part.PartNumber),
          size: Number(part.Size),
          etag: String(part.ETag),
          ...(part.ChecksumSHA256 ? { sha256Hex: base64ToHex(String(part.ChecksumSHA256)) } : {}),
        });
      }
      if (result.IsTruncated !== "true" || !result.NextPartNumberMarker) break;
      marker = String(result.NextPartNumberMarker);
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  async complete(target: MultipartTarget, parts: StoredPart[]): Promise<void> {
    const body = xmlBody.build({
      CompleteMultipartUpload: {
        Part: parts.map((part) => ({
          PartNumber: part.partNumber,
          ETag: part.etag,
          ...(part.sha256Hex ? { ChecksumSHA256: hexToBase64(part.sha256Hex) } : {}),
        })),
      },
    }) as string;
    const bytes = new TextEncoder().encode(body);
    const response = await this.http.send(
      "POST",
      target.key,
      { "content-type": "application/xml", "content-length": String(bytes.length) },
      bytes,
      { uploadId: target.storeUploadId },
    );
    // S3 may answer 200 and report a failure in the body, once assembly has started.
    const result = await this.parse(response, `CompleteMultipartUpload ${target.key}`);
    if (!result.CompleteMultipartUploadResult)
      throw new Error(`S3 CompleteMultipartUpload ${target.key} gave no result`);
  }

  async abort(target: MultipartTarget): Promise<void> {
    const response = await this.http.send("DELETE", target.key, {}, null, {
      uploadId: target.storeUploadId,
    });
    if (response.ok || response.status === 404) {
      await response.body?.cancel();
      return;
    }
    throw new Error(`S3 AbortMultipartUpload failed: ${response.status}`);
  }

  /** The parsed XML of a successful answer; S3's errors become exceptions. */
  private async parse(response: Response, action: string): Promise<S3Xml> {
    if (!response.ok) {
      const code = await s3ErrorCode(response);
      if (code === "NoSuchUpload") throw new MultipartUploadGoneError();
      throw new Error(`S3 ${action} failed: ${response.status} ${code}`);
    }
    const parsed = xml.parse(await response.text()) as S3Xml;
    if (parsed.Error) {
      const code = String(parsed.Error.Code ?? "error");
      if (code === "NoSuchUpload") throw new MultipartUploadGoneError();
      throw new Error(`S3 ${action} failed: ${code}`);
    }
    return parsed;
  }
}

interface S3Part {
  PartNumber?: string;
  Size?: string;
  ETag?: string;
  ChecksumSHA256?: string;
}

interface S3Xml {
  Error?: { Code?: string };
  InitiateMultipartUploadResult?: { UploadId?: string };
  ListPartsResult?: { Part?: S3Part[]; IsTruncated?: string; NextPartNumberMarker?: string };
  CompleteMultipartUploadResult?: unknown;
}
