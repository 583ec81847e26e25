import { AppError } from "../../errors";

/** Refuses a part number outside 1..`count`, the parts an upload was planned with. */
export function checkPartNumber(partNumber: number, count: number): void {
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > count) {
    throw new AppError("invalid_request", `this upload has parts 1 to ${count}`);
  }
}
