import { DESTINATION, DESTINATION_SHAPES } from "../download/destinations.js";
import { DEFAULT_INBOX_DIR, INBOX_DIR_VAR } from "../download/inbox-dir.js";

/**
 * The tools an agent host registers so that a model can move files: `send_file` and
 * `receive_files`, which the host runs in the sandbox as `airlock send` and `airlock pull` (see
 * docs/agent-integration.md). One definition, printed in each host format by `airlock tool-schema`.
 */

/** The JSON Schema of a tool's arguments: an object, as both OpenAI and MCP require. */
interface ObjectSchema {
  type: "object";
  properties: Record<string, object>;
  required?: string[];
  additionalProperties: false;
}

/** MCP's behaviour hints, which a host may use to ask the user before a call. */
interface Annotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

interface Tool {
  name: string;
  title: string;
  description: string;
  parameters: ObjectSchema;
  annotations: Annotations;
}

const SEND_FILE: Tool = {
  name: "send_file",
  title: "Send a file",
  description:
    "Upload a file from this sandbox and get a share link to it. Use it to give the user a file " +
    "you made (a report, a chart, an archive) rather than pasting its contents. The result is a " +
    "JSON object: `url` is the link (anyone who has it can download the file until `expiresAt`), " +
    "with `fileId`, `name`, `size` and `sha256` of what was sent. The file itself stays until " +
    "`fileExpiresAt`: until then `airlock link <fileId>` mints a fresh link to it. With `to`, " +
    "the file is also posted to each of those chats, with `caption`; `deliveries` has one record " +
    "per chat, and one whose `status` is not `delivered` carries the reason in `error` (the link " +
    "works all the same).",
  parameters: {
    type: "object",
    properties: {
      path: {
        type: "string",
        minLength: 1,
        description:
          "Path of the file in this sandbox, absolute or relative to the working directory. " +
          "A directory is sent as one <name>.tar.gz archive of everything in it.",
      },
      caption: {
        type: "string",
        description: "Text posted with the file in the chats of `to`. Only with `to`.",
      },
      to: {
        type: "array",
        items: { type: "string", pattern: DESTINATION.source },
        description:
          `Chats to post the file to as well, each ${DESTINATION_SHAPES}; only chats this ` +
          "conversation allows. Leave out to only get the link.",
      },
    },
    required: ["path"],
    additionalProperties: false,
  },
  annotations: {
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: true,
  },
};

const RECEIVE_FILES: Tool = {
  name: "receive_files",
  title: "Receive files",
  description:
    "Fetch the files people have sent you (attachments in the chat, files provided for this " +
    "task) that have not been fetched yet. Each one is written into the sandbox's inbox " +
    `directory ($${INBOX_DIR_VAR} when it is set, else ${DEFAULT_INBOX_DIR}/ in the working ` +
    'directory), never over an existing file (a clash becomes "name (1).ext"), and the result ' +
    "has one line per file: `[User uploaded: <name> (<size>) at <path>]`, <path> being exactly " +
    "where it was written. Each file is returned once; an empty result means nothing new has " +
    "arrived.",
  parameters: { type: "object", properties: {}, additionalProperties: false },
  annotations: {
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false,
  },
};

const TOOLS: Tool[] = [SEND_FILE, RECEIVE_FILES];

/** The host formats `airlock tool-schema --format` prints. */
export const TOOL_SCHEMA_FORMATS = ["openai", "mcp"] as const;
export type ToolSchemaFormat = (typeof TOOL_SCHEMA_FORMATS)[number];

/**
 * OpenAI function tools, as Chat Completions' `tools` takes them. `strict` is false, and said so:
 * omitted, the Responses API would default it to true, whose rules (every property required,
 * optional ones nullable) these schemas do not follow. For the Responses API, lift `function` up:
 * `{ type: "function", ...tool.function }`.
 */
function openai(): object {
  return TOOLS.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      strict: false,
    },
  }));
}

/** The result of MCP's `tools/list`. */
function mcp(): object {
  return {
    tools: TOOLS.map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: tool.parameters,
      annotations: tool.annotations,
    })),
  };
}

/** The tool definitions in `format`, as a JSON value. */
export function toolSchema(format: ToolSchemaFormat): object {
  return format === "mcp" ? mcp() : openai();
}
