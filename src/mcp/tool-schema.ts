/**
 * The parts every MCP tool definition is made of: the types, the argument patterns both
 * servers check, and the schemas of a file record, a delivery and a link. Data only, no
 * imports: bundled into the shim and the Worker alike.
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

export const STRING = { type: "string" };
export const INTEGER = { type: "integer", minimum: 0 };
export const NULLABLE_STRING = { type: ["string", "null"] };
export const TIME = { type: "string", description: "An ISO 8601 time, UTC." };
export const FILE_ID = {
  type: "string",
  minLength: 1,
  description: "A file's id, as `list_files` or `send_file` gave it.",
};

export const expires = (what: string) => ({
  type: "string",
  pattern: DURATION_PATTERN,
  description: `How long ${what}: 90s, 10m, 24h, 7d, 2w, a sum such as 1h30m, or seconds. Leave out for the relay's default.`,
});
export const MAX_DOWNLOADS_ARG = {
  type: "integer",
  minimum: 1,
  maximum: MAX_DOWNLOADS,
  description: "How many times the link serves the file before it refuses. Leave out for no limit.",
};
export const object = (
  properties: Record<string, object>,
  required: string[] = [],
): ObjectSchema => ({
  type: "object",
  properties,
  ...(required.length > 0 ? { required } : {}),
  additionalProperties: false,
});
/** An output schema: the listed fields are promised, others may come along. */
export const record = (
  properties: Record<string, object>,
  required = Object.keys(properties),
): ObjectSchema => ({
  type: "object",
  properties,
  required,
});
export const hints = (
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
export const FILE_RECORD = record(
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
export const DELIVERY = record(
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
export const LINK = record({
  fileId: STRING,
  url: STRING,
  expiresAt: TIME,
  maxDownloads: { type: ["integer", "null"] },
});
