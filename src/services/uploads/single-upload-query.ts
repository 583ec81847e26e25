import { z } from "zod";
import type { MemberTable } from "../../content/gzip-members";
import { AppError } from "../../errors";
import { invalidRequest } from "../validation";
import { declareUploadBody } from "./declare-upload";
import { SINGLE_UPLOAD_MAX_BYTES } from "./single-upload-limit";

const decimal = z
  .string()
  .regex(/^\d{1,16}$/, "must be a whole number")
  .transform(Number);

/** The query of `POST /v1/single-uploads`: a declaration's fields; `storedSize` is the body's length. */
export const singleUploadQuery = z
  .object({
    name: z.string(),
    size: decimal,
    sha256: z.string(),
    contentType: z.string().optional(),
    encoding: z.string(),
    storedSha256: z.string(),
    /** The gzip member table (docs/api.md): `memberSpan=<span>&memberSizes=<s1>,<s2>,...`. */
    memberSpan: decimal.optional(),
    memberSizes: z
      .string()
      .regex(/^\d{1,16}(,\d{1,16}){0,9999}$/, "must be whole numbers separated by commas")
      .transform((sizes) => sizes.split(",").map(Number))
      .optional(),
  })
  .strict()
  .refine((q) => (q.memberSpan === undefined) === (q.memberSizes === undefined), {
    message: "memberSpan and memberSizes go together",
    path: ["memberSpan"],
  });

export type SingleUploadQuery = z.infer<typeof singleUploadQuery>;

/** A one-request declaration, checked as a declare's body is; the stored fields always given. */
export interface SingleDeclared {
  name: string;
  size: number;
  sha256: string;
  contentType?: string | undefined;
  encoding: "identity" | "gzip";
  storedSize: number;
  storedSha256: string;
  members?: MemberTable | undefined;
}

/** The declaration a one-request upload makes, checked as a declare's body is. */
export function parseDeclaration(
  query: SingleUploadQuery,
  contentLength: string | undefined,
): SingleDeclared {
  if (contentLength === undefined) throw new AppError("length_required");
  if (!/^\d{1,16}$/.test(contentLength)) {
    throw new AppError("invalid_request", "Content-Length must be a whole number");
  }
  const storedSize = Number(contentLength);
  if (storedSize > SINGLE_UPLOAD_MAX_BYTES) {
    throw new AppError(
      "payload_too_large",
      `${storedSize} stored bytes are over the ${SINGLE_UPLOAD_MAX_BYTES}-byte limit of a ` +
        "one-request upload; declare it with POST /v1/uploads",
    );
  }
  const { memberSpan, memberSizes, ...fields } = query;
  const members =
    memberSpan === undefined || memberSizes === undefined
      ? undefined
      : { span: memberSpan, storedSizes: memberSizes };
  const result = declareUploadBody.safeParse({ ...fields, members, storedSize });
  if (!result.success) throw invalidRequest(result.error);
  const { encoding = "identity", storedSha256 = query.storedSha256 } = result.data;
  return { ...result.data, encoding, storedSize, storedSha256 };
}
