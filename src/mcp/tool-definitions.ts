/**
 * Every tool of Airlock's two MCP servers, as data: the stdio server in the shims (`airlock mcp`,
 * which reads and writes the sandbox's disk) and the relay's `POST /mcp` (which hands out URLs
 * instead). `airlock tool-schema --format mcp` prints the stdio tools from here, the Python shim
 * carries a generated copy, and the relay lists its own from here: one source for all.
 *
 * No imports (this module is bundled into the shim and the Worker alike) and no code beyond
 * picking a server's tools.
 */

/** Which server offers a tool: `stdio` is `airlock mcp` in a shim, `relay` is `POST /mcp`. */
export type ToolServer = "stdio" | "relay";

/** A JSON Schema for an object: a tool's arguments and its `structuredContent` both are one. */
export interface ObjectSchema {
  type: "object";
  properties: Record<string, object>;
  required?: string[];
  additionalProperties?: boolean;
}

/** MCP's behaviour hints, which a host may use to ask the user before a call. */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** One tool, as MCP's `tools/list` lists it, plus the servers that offer it. */
export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: ObjectSchema;
  outputSchema: ObjectSchema;
  annotations: ToolAnnotations;
  servers: readonly ToolServer[];
}

/** A chat a file can be delivered to (`send --to`); the relay checks the same shapes. */
export const DESTINATION_PATTERN = "^(telegram:-?\\d+|discord:\\d+|slack:[A-Z0-9]+|whatsapp:\\d+)$";
/** The shapes of `DESTINATION_PATTERN`, in words. */
export const DESTINATION_SHAPES =
  "telegram:<chatId>, discord:<channelId>, slack:<channelId> or whatsapp:<wa_id>";
/** A duration as the shims' `--expires` takes it: `90s`, `10m`, `24h`, `7d`, `2w`, `1h30m`, or seconds. */
export const DURATION_PATTERN = "^(\\d+|(\\d+[smhdw])+)$";
/** The relay's cap on a link's download limit. */
export const MAX_DOWNLOADS = 1_000_000;

const STRING = { type: "string" };
const INTEGER = { type: "integer", minimum: 0 };
const NULLABLE_STRING = { type: ["string", "null"] };
const TIME = { type: "string", description: "An ISO 8601 time, UTC." };
const FILE_ID = {
  type: "string",
  minLength: 1,
  description: "A file's id, as `list_files` or `send_file` gave it.",
};

const expires = (what: string) => ({
  type: "string",
  pattern: DURATION_PATTERN,
  description: `How long ${what}: 90s, 10m, 24h, 7d, 2w, a sum such as 1h30m, or seconds. Leave out for the relay's default.`,
});
const MAX_DOWNLOADS_ARG = {
  type: "integer",
  minimum: 1,
  maximum: MAX_DOWNLOADS,
  description: "How many times the link serves the file before it refuses. Leave out for no limit.",
};
const object = (properties: Record<string, object>, required: string[] = []): ObjectSchema => ({
  type: "object",
  properties,
  ...(required.length > 0 ? { required } : {}),
  additionalProperties: false,
});
/** An output schema: the listed fields are promised, others may come along. */
const record = (
  properties: Record<string, object>,
  required = Object.keys(properties),
): ObjectSchema => ({
  type: "object",
  properties,
  required,
});
const hints = (
  readOnly: boolean,
  destructive: boolean,
  idempotent: boolean,
  openWorld: boolean,
) => ({
  readOnlyHint: readOnly,
  destructiveHint: destructive,
  idempotentHint: idempotent,
  openWorldHint: openWorld,
});

/** A stored file as the relay describes it (`ls --json`, `GET /v1/files`). */
const FILE_RECORD = record(
  {
    fileId: STRING,
    name: STRING,
    size: INTEGER,
    sha256: STRING,
    contentType: STRING,
    status: { enum: ["pending", "verified"] },
    url: STRING,
    urlExpiresAt: TIME,
    expiresAt: TIME,
  },
  ["fileId", "name", "size", "sha256", "status", "url", "expiresAt"],
);
/** One delivery to a chat; a failed one says why in `error`. */
const DELIVERY = record(
  {
    fileId: STRING,
    to: STRING,
    status: { enum: ["sending", "delivered", "failed"] },
    mode: STRING,
    method: STRING,
    messageId: NULLABLE_STRING,
    error: {},
  },
  ["fileId", "to", "status"],
);
const LINK = record({
  fileId: STRING,
  url: STRING,
  expiresAt: TIME,
  maxDownloads: { type: ["integer", "null"] },
});

const SEND_FILE: ToolDefinition = {
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

const RECEIVE_FILES: ToolDefinition = {
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

const RECEIVE_FILES_BY_URL: ToolDefinition = {
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

const REQUEST_FILE: ToolDefinition = {
  name: "request_file",
  title: "Ask a person for a file",
  description:
    "Make an upload link to give a person (in the chat, or in your answer) so that they can send " +
    "you one file: they open it in a browser, or run `curl -T <file> <url>`. The file then " +
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

const SHARE_LINK: ToolDefinition = {
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

const LIST_FILES: ToolDefinition = {
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

const REMOVE_FILE: ToolDefinition = {
  name: "remove_file",
  title: "Remove a file",
  description: "Delete one of your files for good: every share link to it stops working at once.",
  inputSchema: object({ file_id: FILE_ID }, ["file_id"]),
  outputSchema: record({ fileId: STRING, deletedAt: TIME }),
  annotations: hints(false, true, true, false),
  servers: ["stdio", "relay"],
};

const CREATE_UPLOAD: ToolDefinition = {
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

const DELIVER_FILE: ToolDefinition = {
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
export const TOOL_DEFINITIONS: readonly ToolDefinition[] = [
  SEND_FILE,
  RECEIVE_FILES,
  RECEIVE_FILES_BY_URL,
  REQUEST_FILE,
  SHARE_LINK,
  LIST_FILES,
  REMOVE_FILE,
  CREATE_UPLOAD,
  DELIVER_FILE,
];

/** What the stdio server's `initialize` tells the client (and through it the model). */
export const STDIO_INSTRUCTIONS =
  "Airlock moves files between this sandbox and people. send_file uploads a file (or a " +
  "directory, as one archive) and answers a share link, and can post it to a chat; " +
  "receive_files writes the files people sent into the inbox directory and says where; " +
  "request_file makes an upload link to give a person. share_link, list_files and " +
  "remove_file manage the files already sent.";

/** MCP's `Tool`: what `tools/list` answers for one tool. */
export type McpTool = Omit<ToolDefinition, "servers">;

/** The tools `server` offers, as its `tools/list` answers them (without the `servers` marker). */
export function toolsFor(server: ToolServer): McpTool[] {
  return TOOL_DEFINITIONS.filter((tool) => tool.servers.includes(server)).map(
    ({ servers: _servers, ...tool }) => tool,
  );
}
