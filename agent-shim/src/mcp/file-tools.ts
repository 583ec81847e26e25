import { relayConfig, retryPolicy } from "../cli/config.js";
import { RelayClient, type UploadRequestBody } from "../transport/relay-client.js";
import type { ToolArguments } from "./arguments.js";
import type { ToolResult } from "./server.js";
import { expirySeconds, inToolWords, linkOptionsOf } from "./tool-options.js";

/**
 * The tools that are one relay call each, as `airlock request`, `link`, `ls` and `rm` make it;
 * each answers what that command prints with --json, as text and as structured content.
 */

function relay(): RelayClient {
  return new RelayClient(relayConfig(), retryPolicy());
}

function answer(structured: object): ToolResult {
  return {
    content: [{ type: "text", text: JSON.stringify(structured) }],
    structuredContent: structured,
  };
}

/** `request_file`: an upload link for a person (`airlock request --json`). */
export async function requestFileTool(args: ToolArguments): Promise<ToolResult> {
  const body: UploadRequestBody = {};
  if (args.name !== undefined) body.name = args.name as string;
  if (args.max_bytes !== undefined) body.maxBytes = args.max_bytes as number;
  const ttlSeconds = expirySeconds(args, "request_file");
  if (ttlSeconds !== undefined) body.ttlSeconds = ttlSeconds;
  const created = await relay()
    .createUploadRequest(body)
    .catch((err: unknown) => {
      throw inToolWords(err);
    });
  return answer(created);
}

/** `share_link`: a fresh link to a file (`airlock link --json`). */
export async function shareLinkTool(args: ToolArguments): Promise<ToolResult> {
  const fileId = args.file_id as string;
  const minted = await relay()
    .createLink(fileId, linkOptionsOf(args, "share_link") ?? {})
    .catch((err: unknown) => {
      throw inToolWords(err);
    });
  const { url, expiresAt, maxDownloads } = minted;
  return answer({ fileId, url, expiresAt, maxDownloads });
}

/** `list_files`: this session's files, newest first (`airlock ls --json`). */
export async function listFilesTool(): Promise<ToolResult> {
  return answer({ files: await relay().listFiles() });
}

/** `remove_file`: deletes a file; its links stop working (`airlock rm`). */
export async function removeFileTool(args: ToolArguments): Promise<ToolResult> {
  const deleted = await relay().deleteFile(args.file_id as string);
  return {
    content: [{ type: "text", text: `deleted ${deleted.fileId}` }],
    structuredContent: deleted,
  };
}
