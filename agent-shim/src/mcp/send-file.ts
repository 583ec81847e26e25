import { ARCHIVE_TYPE } from "../archive/archive-build.js";
import { relayConfig, retryPolicy } from "../cli/config.js";
import { CliError, UsageError } from "../cli/errors.js";
import { failureLine, note } from "../cli/output.js";
import { currentCall, runInCall } from "../cli/tool-call.js";
import {
  acknowledged,
  checkSendable,
  deliver,
  sendDirectory,
  sendFile,
  sendOptions,
} from "../commands/send.js";
import { RelayClient } from "../transport/relay-client.js";
import { readSample } from "../upload/prepare.js";
import { withLink } from "../upload/send-flags.js";
import type { SendResult } from "../upload/send-result.js";
import type { ToolArguments } from "./arguments.js";
import type { ToolResult } from "./server.js";
import { inToolWords, linkOptionsOf } from "./tool-options.js";

/**
 * `send_file`: sends one file or directory as `airlock send --json` does (a directory as one
 * `<name>.tar.gz`), mints a link of its own limits when asked, then delivers it to each chat of
 * `to`. Answers the `send --json` object three ways: as JSON text, as `structuredContent`, and
 * as a `resource_link` to the share URL. A cancelled call takes back the file it registered.
 */
export async function sendFileTool(args: ToolArguments): Promise<ToolResult> {
  const path = args.path as string;
  const destinations = [...new Set((args.to as string[] | undefined) ?? [])];
  const caption = args.caption as string | undefined;
  if (caption !== undefined && destinations.length === 0) {
    throw new UsageError("send_file: caption needs to");
  }
  const link = linkOptionsOf(args, "send_file");
  const policy = retryPolicy();
  const relay = new RelayClient(relayConfig(), policy);
  const options = sendOptions(relay, policy);
  const isDirectory = checkSendable(path);
  const mimeType = isDirectory ? ARCHIVE_TYPE : readSample(path).contentType;

  let sent: SendResult | undefined;
  try {
    sent = isDirectory
      ? await sendDirectory(path, options, undefined)
      : await sendFile(path, options, undefined).finally(() => options.sent.save());
    const result = link
      ? await withLink(relay, sent, link).catch((err: unknown) => {
          throw inToolWords(err);
        })
      : sent;
    if (result.status === "pending") note(`${result.name} is still being verified by the relay`);
    const outcomes = await Promise.all(
      destinations.map((to) => deliver(relay, result, to, caption)),
    );
    const warnings: string[] = [];
    for (const { delivery, report, warning } of outcomes) {
      report();
      result.deliveries.push(delivery);
      if (!acknowledged(delivery)) {
        warnings.push(failureLine(new CliError(warning ?? `delivery to ${delivery.to} failed`)));
      }
    }
    const failed = warnings.length > 0;
    return {
      content: [
        { type: "text", text: [JSON.stringify(result), ...warnings].join("\n") },
        { type: "resource_link", uri: result.url, name: result.name, mimeType, size: result.size },
      ],
      structuredContent: result,
      ...(failed ? { isError: true } : {}),
    };
  } finally {
    // Cancelled once the file was registered: take it back, so nothing of the call is left.
    if (sent !== undefined && currentCall()?.signal?.aborted) {
      const fileId = sent.fileId;
      await runInCall({}, () => relay.deleteFile(fileId)).catch(() => undefined);
    }
  }
}
