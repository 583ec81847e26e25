/**
 * The tools both servers offer for what the relay holds (links, files, deliveries), and those
 * only the relay's `POST /mcp` offers, which hand out URLs instead of touching a disk.
 */
import {
  DESTINATION_PATTERN,
  DESTINATION_SHAPES,
  FILE_ID,
  FILE_RECORD,
  DELIVERY,
  INTEGER,
  LINK,
  MAX_DOWNLOADS_ARG,
  NULLABLE_STRING,
  STRING,
  TIME,
  expires,
  hints,
  object,
  record,
  type ToolDefinition,
} from "./tool-schema";
import { RECEIVE_FILES } from "./sandbox-tools";

export const RECEIVE_FILES_BY_URL: ToolDefinition = {
  ...RECEIVE_FILES,
  description:
    "List the files people have sent you (attachments in the chat, files provided for this " +
    "task, uploads through a `request_file` link) that have not been fetched yet, each with a " +
    "short-lived `downloadUrl`: fetch it whole (`curl -fo <name> '<downloadUrl>'`) before " +
    "`expiresAt`; a file fetched whole is not listed again. An empty `items` means nothing new " +
    "has arrived.",
  outputSchema: record({
    items: {
      type: "array",
      items: record(
        {
          itemId: STRING,
          fileId: STRING,
          name: STRING,
          size: INTEGER,
          sha256: STRING,
          contentType: STRING,
          source: STRING,
          downloadUrl: STRING,
          expiresAt: TIME,
        },
        ["itemId", "fileId", "name", "size", "sha256", "source", "downloadUrl", "expiresAt"],
      ),
    },
  }),
  servers: ["relay"],
};

export const REQUEST_FILE: ToolDefinition = {
  name: "request_file",
  title: "Ask a person for a file",
  description:
    "Make an upload link to give a person (in the chat, or in your answer) so that they can send " +
    "you one file: they open it in a browser, or run `curl --fail-with-body -T <file> <url>/` " +
    "(the file keeps its name). The file then " +
    "arrives in your inbox, for `receive_files`. The link takes one file.",
  inputSchema: object({
    name: { type: "string", minLength: 1, description: "The file name suggested to the person." },
    max_bytes: {
      type: "integer",
      minimum: 1,
      description: "The largest file the link takes, in bytes. Leave out for the relay's limit.",
    },
    expires: expires("the link takes an upload"),
  }),
  outputSchema: record(
    { requestId: STRING, url: STRING, name: NULLABLE_STRING, maxBytes: INTEGER, expiresAt: TIME },
    ["requestId", "url", "maxBytes", "expiresAt"],
  ),
  annotations: hints(false, false, false, true),
  servers: ["stdio", "relay"],
};

export const SHARE_LINK: ToolDefinition = {
  name: "share_link",
  title: "Make a new share link",
  description:
    "Mint a fresh share link to one of your files (its earlier links keep working), for instance " +
    "when the first one expired, or to give a link that works for a short time or a few downloads.",
  inputSchema: object(
    {
      file_id: FILE_ID,
      expires: expires("the link works (it cannot outlive the file)"),
      max_downloads: MAX_DOWNLOADS_ARG,
    },
    ["file_id"],
  ),
  outputSchema: LINK,
  annotations: hints(false, false, false, false),
  servers: ["stdio", "relay"],
};

export const LIST_FILES: ToolDefinition = {
  name: "list_files",
  title: "List your files",
  description:
    "List the files this conversation has stored (sent files and files received), newest first, " +
    "each with its id, name, size, expiry and a fresh share link.",
  inputSchema: object({}),
  outputSchema: record({ files: { type: "array", items: FILE_RECORD } }),
  annotations: hints(true, false, true, false),
  servers: ["stdio", "relay"],
};

export const REMOVE_FILE: ToolDefinition = {
  name: "remove_file",
  title: "Remove a file",
  description: "Delete one of your files for good: every share link to it stops working at once.",
  inputSchema: object({ file_id: FILE_ID }, ["file_id"]),
  outputSchema: record({ fileId: STRING, deletedAt: TIME }),
  annotations: hints(false, true, true, false),
  servers: ["stdio", "relay"],
};

export const CREATE_UPLOAD: ToolDefinition = {
  name: "create_upload",
  title: "Upload a file by URL",
  description:
    "Get a single-use URL to upload one file from your terminal: run `curl -fT <path> '<url>'` " +
    "(the command is in `command`). curl's answer is the stored file's record, with its share " +
    "link in `url`; no second call is needed. The upload must come before `expiresAt`, no " +
    "larger than `maxBytes`.",
  inputSchema: object(
    {
      name: {
        type: "string",
        minLength: 1,
        description: "The file's name, as the person will see it.",
      },
      size: {
        type: "integer",
        minimum: 0,
        description:
          "The file's size in bytes, when known: a file over the quota is refused at once.",
      },
    },
    ["name"],
  ),
  outputSchema: record(
    { url: STRING, name: STRING, maxBytes: INTEGER, expiresAt: TIME, command: STRING },
    ["url", "name", "maxBytes", "expiresAt", "command"],
  ),
  annotations: hints(false, false, false, true),
  servers: ["relay"],
};

export const DELIVER_FILE: ToolDefinition = {
  name: "deliver_file",
  title: "Post a file to a chat",
  description:
    "Post one of your files to a chat this conversation allows, with an optional caption: as a " +
    "native attachment when the platform takes its size, else as a message with its share link. " +
    "The result says whether the platform delivered it; a failure says why in `error`.",
  inputSchema: object(
    {
      file_id: FILE_ID,
      to: {
        type: "string",
        pattern: DESTINATION_PATTERN,
        description: `The chat: ${DESTINATION_SHAPES}.`,
      },
      caption: { type: "string", description: "Text posted with the file." },
    },
    ["file_id", "to"],
  ),
  outputSchema: DELIVERY,
  annotations: hints(false, false, true, true),
  servers: ["relay"],
};

/** Every tool of both servers. */
