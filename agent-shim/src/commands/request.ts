import { maxExtractBytes } from "../archive/archive-limit.js";
import { parseCommandArgs } from "../cli/args.js";
import { relayConfig, retryPolicy } from "../cli/config.js";
import { parseDuration } from "../cli/duration.js";
import { UsageError } from "../cli/errors.js";
import { USAGE as USAGES, commandHelp } from "../cli/help.js";
import { note, print } from "../cli/output.js";
import { curlCommand } from "../../../src/services/upload-links/curl-command.js";
import { RelayClient, type UploadRequestBody } from "../transport/relay-client.js";

const USAGE = USAGES.request;

const OPTIONS = {
  name: { type: "string" },
  "max-bytes": { type: "string" },
  expires: { type: "string" },
  json: { type: "boolean" },
  cancel: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** `airlock request`: asks a person for a file through an upload link (`/u/<token>`). */
export async function request(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE);
  if (values.help) return print(commandHelp("request"));
  if (positionals.length > 0) {
    throw new UsageError(`request takes no arguments; usage: ${USAGE}`);
  }
  if (values.cancel !== undefined) {
    if (values.name !== undefined || values["max-bytes"] !== undefined || values.expires) {
      throw new UsageError(`--cancel takes only the request id; usage: ${USAGE}`);
    }
    const relay = new RelayClient(relayConfig(), retryPolicy());
    const state = await relay.cancelUploadRequest(values.cancel);
    return print(values.json ? JSON.stringify(state) : `cancelled ${state.requestId}`);
  }
  const body: UploadRequestBody = {};
  if (values.name !== undefined) body.name = values.name;
  if (values["max-bytes"] !== undefined)
    body.maxBytes = maxExtractBytes(values["max-bytes"], USAGE);
  if (values.expires !== undefined)
    body.ttlSeconds = parseDuration(values.expires, "--expires", USAGE);
  const created = await new RelayClient(relayConfig(), retryPolicy()).createUploadRequest(body);
  if (values.json) return print(JSON.stringify(created));
  print(created.url);
  // On stderr, so that `url=$(airlock request)` still gets the link alone.
  note(`from a terminal: ${curlCommand(created.url)}`);
}
