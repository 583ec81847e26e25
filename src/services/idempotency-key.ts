import { AppError } from "../errors";

/**
 * The optional `Idempotency-Key` header of a request that must not take effect twice
 * (a delivery, a one-request upload): 1 to 200 characters, or undefined when not sent.
 */
export function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header !== undefined && (header.length === 0 || header.length > 200)) {
    throw new AppError("invalid_request", "Idempotency-Key must be 1 to 200 characters");
  }
  return header;
}
