import { UsageError } from "../cli/errors.js";

/** `airlock request`: asks a person for a file through an upload link (`/u/<token>`). */
export async function request(_args: string[]): Promise<void> {
  throw new UsageError("request is not built yet");
}
