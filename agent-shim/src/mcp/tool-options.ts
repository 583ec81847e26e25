import { parseDuration } from "../cli/duration.js";
import { RefusalError } from "../cli/errors.js";
import type { LinkOptions } from "../transport/relay-client.js";
import type { ToolArguments } from "./arguments.js";

/** A tool's `expires` in seconds, or undefined when not given; `tool` names it in a problem. */
export function expirySeconds(args: ToolArguments, tool: string): number | undefined {
  const expires = args.expires as string | undefined;
  return expires === undefined ? undefined : parseDuration(expires, "expires", tool);
}

/** A tool's `expires` and `max_downloads` as a link's options; undefined when neither is given. */
export function linkOptionsOf(args: ToolArguments, tool: string): LinkOptions | undefined {
  const ttlSeconds = expirySeconds(args, tool);
  const maxDownloads = args.max_downloads as number | undefined;
  if (ttlSeconds === undefined && maxDownloads === undefined) return undefined;
  return {
    ...(ttlSeconds !== undefined ? { ttlSeconds } : {}),
    ...(maxDownloads !== undefined ? { maxDownloads } : {}),
  };
}

/** The relay names its JSON field (`ttlSeconds`) and the CLI its flag; the model gave `expires`. */
export function inToolWords(err: unknown): unknown {
  if (!(err instanceof RefusalError)) return err;
  const message = err.message.replace(/(ttlSeconds|--expires): /, "expires: ");
  return message === err.message
    ? err
    : new RefusalError(message, err.status, err.detail, err.body);
}
