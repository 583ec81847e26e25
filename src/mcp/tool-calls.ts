import type { z } from "zod";
import type { Session } from "../db/sessions";
import { deleteFile, listFiles } from "../db/files";
import type { Deps } from "../deps";
import { bytesToHex } from "../encoding";
import { AppError } from "../errors";
import { visibleFile } from "../services/sharing/visible-file";
import { deliverBody, deliverFile } from "../services/delivery/deliver";
import { humanSize } from "../services/human-size";
import { toFileRecord } from "../services/file-record";
import { createLinkBody, createShareLink } from "../services/sharing/share-links";
import { createRequestBody, createUploadRequest } from "../services/upload-links/upload-requests";
import { createAgentUpload } from "./agent-upload";
import { durationSeconds } from "./duration";
import { inboxDownloads, type InboxDownload } from "./inbox-download";
import { shellWord } from "./shell-word";
import { invalidRequest } from "../services/validation";

/** Who is calling a tool, and from where (the origin the URLs it hands out point at). */
export interface ToolContext {
  deps: Deps;
  session: Session;
  origin: string;
  /** Aborted when the client goes away: a long wait stops. */
  signal: AbortSignal;
}

/** A tool's answer: a few lines for the model, and the fields of its output schema. */
export interface ToolOutcome {
  text: string;
  structured: Record<string, unknown>;
}

/** Arguments already checked against the tool's input schema. */
type Args = Record<string, unknown>;

/**
 * A tool's work, and what it is doing in the words `airlock` uses for the same request
 * (`relay refused <action>: <code>: <message>`) when the relay refuses it.
 */
interface ToolCall {
  action(args: Args): string;
  run(context: ToolContext, args: Args): Promise<ToolOutcome>;
}

const str = (value: unknown) => (typeof value === "string" ? value : undefined);
const num = (value: unknown) => (typeof value === "number" ? value : undefined);
const seconds = (value: unknown, what: string) =>
  value === undefined ? undefined : durationSeconds(String(value), what);

/** The longest `receive_files` waits between two looks at the inbox. */
const MAX_POLL_MS = 5000;

/** The relay's tools, by name (their definitions: src/mcp/tool-definitions.ts). */
export const TOOL_CALLS: Record<string, ToolCall> = {
  create_upload: {
    action: (args) => `the upload URL for ${str(args.name)}`,
    async run({ deps, session, origin }, args) {
      const size = num(args.size);
      const name = str(args.name) ?? "";
      const created = await createAgentUpload(deps, session, { name, size }, origin);
      const text = [
        `Upload URL for ${created.name}, single use, until ${created.expiresAt}. Run:`,
        created.command,
        `(put the file's path in place of ${shellWord(created.name)} if it is elsewhere). curl ` +
          "prints the stored file's record; its `url` is the share link. A gzipped file goes " +
          "with -H 'Content-Encoding: gzip' (then give `size`, the size unzipped).",
      ].join("\n");
      return { text, structured: { ...created } };
    },
  },
  receive_files: {
    action: () => "listing the inbox",
    async run({ deps, session, origin, signal }, args) {
      const deadline = deps.now() + (num(args.wait_seconds) ?? 0) * 1000;
      let items: InboxDownload[] = await inboxDownloads(deps, session.id, origin);
      for (let pause = 1000; items.length === 0 && deps.now() < deadline && !signal.aborted;) {
        await sleep(Math.min(pause, deadline - deps.now()), signal);
        items = await inboxDownloads(deps, session.id, origin);
        pause = Math.min(pause * 2, MAX_POLL_MS);
      }
      const lines = items.map(
        (item) =>
          `[User uploaded: ${item.name} (${humanSize(item.size)})] fetch it whole before ` +
          `${item.expiresAt}: curl --fail-with-body -sS -o ${shellWord(item.name)} '${item.downloadUrl}'`,
      );
      return {
        text: lines.length > 0 ? lines.join("\n") : "No new files.",
        structured: { items },
      };
    },
  },
  request_file: {
    action: () => "the upload link request",
    async run({ deps, session, origin }, args) {
      const body = checked(createRequestBody, {
        name: str(args.name),
        maxBytes: num(args.max_bytes),
        ttlSeconds: seconds(args.expires, "expires"),
      });
      const created = await createUploadRequest(deps, session, body, origin);
      const text = `Upload link (one file, until ${created.expiresAt}): ${created.url}`;
      return { text, structured: { ...created } };
    },
  },
  share_link: {
    action: (args) => `a new link to file ${str(args.file_id)}`,
    async run(context, args) {
      const { deps, origin } = context;
      const file = await visibleFile(deps, caller(context), str(args.file_id) ?? "");
      const body = checked(createLinkBody, {
        ttlSeconds: seconds(args.expires, "expires"),
        maxDownloads: num(args.max_downloads),
      });
      const link = await createShareLink(deps, file, body, origin);
      const text = `${link.url} (until ${link.expiresAt})`;
      return { text, structured: { fileId: file.id, ...link } };
    },
  },
  list_files: {
    action: () => "listing files",
    async run({ deps, session, origin }) {
      const rows = await listFiles(deps.db, session.id, deps.now(), 1000);
      const files = await Promise.all(rows.map((file) => toFileRecord(deps, file, origin)));
      const lines = files.map(
        (file) => `${file.fileId}  ${file.name}  ${humanSize(file.size)}  ${file.url}`,
      );
      return { text: lines.length > 0 ? lines.join("\n") : "No files.", structured: { files } };
    },
  },
  deliver_file: {
    action: (args) => `delivery of ${str(args.file_id)} to ${str(args.to)}`,
    async run(context, args) {
      const { deps, session, origin } = context;
      const file = await visibleFile(deps, caller(context), str(args.file_id) ?? "");
      const body = checked(deliverBody, { to: str(args.to), caption: str(args.caption) });
      // The same key `airlock send --to` sends: the tool is idempotent (its annotations say
      // so), so asking again answers the first delivery rather than posting twice.
      const key = bytesToHex(
        await crypto.subtle.digest(
          "SHA-256",
          new TextEncoder().encode(JSON.stringify([file.id, body.to, body.caption ?? null])),
        ),
      );
      const delivery = await deliverFile(deps, session, file, body, key, origin);
      const text =
        delivery.status === "delivered"
          ? `delivered ${file.name} to ${delivery.to} (${delivery.mode})`
          : `delivery of ${file.name} to ${delivery.to}: ${delivery.status}` +
            (delivery.error ? ` (${delivery.error})` : "");
      return { text, structured: { ...delivery } };
    },
  },
  remove_file: {
    action: (args) => `deleting file ${str(args.file_id)}`,
    async run(context, args) {
      const { deps } = context;
      const file = await visibleFile(deps, caller(context), str(args.file_id) ?? "");
      const deletedAt = await deleteFile(deps.db, file.id, deps.now());
      if (deletedAt === null) throw new AppError("file_not_found");
      return {
        text: `deleted ${file.id}`,
        structured: { fileId: file.id, deletedAt: new Date(deletedAt).toISOString() },
      };
    },
  },
};

function caller(context: ToolContext) {
  return { kind: "session" as const, session: context.session };
}

/** `value` parsed by one of the relay's request schemas, refused as its route would refuse it. */
function checked<T>(schema: z.ZodType<T>, value: Record<string, unknown>): T {
  const defined = Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
  const result = schema.safeParse(defined);
  if (result.success) return result.data;
  throw invalidRequest(result.error);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
