import { maxExtractBytes } from "../archive/archive-limit.js";
import { parseCommandArgs } from "../cli/args.js";
import { relayConfig, retryPolicy } from "../cli/config.js";
import { parseDuration } from "../cli/duration.js";
import { UsageError } from "../cli/errors.js";
import { print } from "../cli/output.js";
import { RelayClient, type UploadRequestBody } from "../transport/relay-client.js";

const USAGE = "airlock request [--name <hint>] [--max-bytes <n>] [--expires <duration>] [--json]";

const HELP = `usage: ${USAGE}

Ask a person for a file: prints an upload link (…/u/<token>) to show them in any chat or
terminal. They open it in a browser (or run curl -T <file> <link>); the file arrives in
this sandbox's inbox, for airlock pull. The link takes one file.

  --name <hint>         the file name suggested to the person
  --max-bytes <n>       the largest file the link takes (K, M, G, T: powers of 1024;
                        default: the relay's limit)
  --expires <duration>  how long the link takes an upload (90s, 10m, 24h, 7d; default:
                        the relay's link lifetime, never past the session's end)
  --json                print { requestId, url, name, maxBytes, expiresAt } instead of the URL

example: airlock request --name invoice.pdf --expires 1d`;

const OPTIONS = {
  name: { type: "string" },
  "max-bytes": { type: "string" },
  expires: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** `airlock request`: asks a person for a file through an upload link (`/u/<token>`). */
export async function request(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE);
  if (values.help) return print(HELP);
  if (positionals.length > 0) {
    throw new UsageError(`request takes no arguments; usage: ${USAGE}`);
  }
  const body: UploadRequestBody = {};
  if (values.name !== undefined) body.name = values.name;
  if (values["max-bytes"] !== undefined)
    body.maxBytes = maxExtractBytes(values["max-bytes"], USAGE);
  if (values.expires !== undefined)
    body.ttlSeconds = parseDuration(values.expires, "--expires", USAGE);
  const created = await new RelayClient(relayConfig(), retryPolicy()).createUploadRequest(body);
  print(values.json ? JSON.stringify(created) : created.url);
}
