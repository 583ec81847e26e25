import { z } from "zod";
import { AppError } from "../errors";
import { fileNameProblem } from "../names";

/** Hex SHA-256 as the shim and the relay write it. */
export const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters");

/** A byte count: a whole number from 0 up to what JavaScript counts exactly. */
export const byteCount = z
  .number()
  .int("must be a whole number")
  .nonnegative("must not be negative")
  .max(Number.MAX_SAFE_INTEGER);

/**
 * A declared file name: it must already obey the one name rule (`src/names.ts`), so what a
 * client declares is exactly what people and disks will see. (Names from people — chat
 * attachments, seeds — are cleaned instead of refused.)
 */
export const fileName = z.string().superRefine((name, context) => {
  const problem = fileNameProblem(name);
  if (problem) context.addIssue({ code: "custom", message: problem });
});

/** A MIME type such as `text/plain; charset=utf-8` (RFC 9110 §8.3.1). */
export const mediaType = z
  .string()
  .max(200)
  .regex(
    /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;\s*[\w!#$&^.+-]+=("[\x20\x21\x23-\x7e]*"|[\w!#$&^.+-]+))*$/,
    "must be a MIME type",
  );

/** `telegram:<chatId>`, `discord:<channelId>`, `slack:<channelId>` or `whatsapp:<wa_id>` (digits). */
export const destination = z
  .string()
  .regex(
    /^(telegram:-?\d{1,20}|discord:\d{1,25}|slack:[A-Z0-9]{1,30}|whatsapp:\d{1,20})$/,
    "must be telegram:<chatId>, discord:<channelId>, slack:<channelId> or whatsapp:<wa_id>",
  );

/**
 * A failed zod check as the relay's 400: the first issue, after the path of the field it is
 * about (`name: must not be empty`), as every JSON body, query and tool argument is refused.
 */
export function invalidRequest(error: z.ZodError, fallback = "invalid request"): AppError {
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ` : "";
  return new AppError("invalid_request", `${where}${issue?.message ?? fallback}`);
}
