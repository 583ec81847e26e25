/** The tools of `airlock mcp` in a shim, which reads and writes the sandbox's disk. */
import {
  DESTINATION_PATTERN,
  DESTINATION_SHAPES,
  DELIVERY,
  INTEGER,
  MAX_DOWNLOADS_ARG,
  STRING,
  TIME,
  expires,
  hints,
  object,
  record,
  type ToolDefinition,
} from "./tool-schema";

export const SEND_FILE: ToolDefinition = {
  name: "send_file",
  title: "Send a file",
  description:
    "Upload a file from this sandbox and get a share link to it. Use it to give the user a file " +
    "you made (a report, a chart, an archive) rather than pasting its contents. The result has " +
    "`url`, the link (anyone who has it can download the file until `expiresAt`), with `fileId`, " +
    "`name`, `size` and `sha256` of what was sent. The file itself stays until `fileExpiresAt`: " +
    "until then a fresh link can be minted to it (`share_link`, or `airlock link <fileId>`). " +
    "With `to`, the file is also posted to " +
    "each of those chats, with `caption`; `deliveries` has one record per chat, and one whose " +
    "`status` is not `delivered` carries the reason in `error` (the link works all the same).",
  inputSchema: object(
    {
      path: {
        type: "string",
        minLength: 1,
        description:
          "Path of the file in this sandbox, absolute or relative to the working directory. " +
          "A directory is sent as one <name>.tar.gz archive of everything in it.",
      },
      to: {
        type: "array",
        items: { type: "string", pattern: DESTINATION_PATTERN },
        description:
          `Chats to post the file to as well, each ${DESTINATION_SHAPES}; only chats this ` +
          "conversation allows. Leave out to only get the link.",
      },
      caption: {
        type: "string",
        description: "Text posted with the file in the chats of `to`. Only with `to`.",
      },
      expires: expires("the link works (it cannot outlive the file)"),
      max_downloads: MAX_DOWNLOADS_ARG,
    },
    ["path"],
  ),
  outputSchema: record(
    {
      fileId: STRING,
      name: STRING,
      size: INTEGER,
      sha256: STRING,
      url: STRING,
      expiresAt: TIME,
      fileExpiresAt: TIME,
      status: { enum: ["pending", "verified"] },
      deduped: { type: "boolean" },
      uploadedBytes: INTEGER,
      deliveries: { type: "array", items: DELIVERY },
      archive: { type: "boolean" },
      files: INTEGER,
    },
    [
      "fileId",
      "name",
      "size",
      "sha256",
      "url",
      "expiresAt",
      "fileExpiresAt",
      "status",
      "deduped",
      "uploadedBytes",
      "deliveries",
    ],
  ),
  annotations: hints(false, false, false, true),
  servers: ["stdio"],
};

export const RECEIVE_FILES: ToolDefinition = {
  name: "receive_files",
  title: "Receive files",
  description:
    "Fetch the files people have sent you (attachments in the chat, files provided for this " +
    "task, uploads through a `request_file` link) that have not been fetched yet. Each one is " +
    "written into the sandbox's inbox directory ($AIRLOCK_INBOX_DIR when it is set, else " +
    'uploads/ in the working directory), never over an existing file (a clash becomes "name ' +
    '(1).ext"), and the result has one line per file: `[User uploaded: <name> (<size>) at ' +
    "<path>]`, <path> being exactly where it was written. Each file is returned once; an empty " +
    "result means nothing new has arrived.",
  inputSchema: object({
    wait_seconds: {
      type: "integer",
      minimum: 0,
      maximum: 3600,
      description:
        "When nothing has arrived yet, wait up to this many seconds for a file. Leave out (or 0) not to wait.",
    },
  }),
  outputSchema: record({
    files: {
      type: "array",
      items: record(
        {
          itemId: STRING,
          fileId: STRING,
          name: STRING,
          size: INTEGER,
          sha256: STRING,
          path: STRING,
          source: STRING,
        },
        ["fileId", "name", "size", "sha256", "path", "source"],
      ),
    },
  }),
  annotations: hints(false, false, false, false),
  servers: ["stdio"],
};
