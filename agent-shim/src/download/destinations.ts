import { DESTINATION_PATTERN } from "../../../src/mcp/tool-definitions.js";

/**
 * A chat a file can be delivered to, as `send --to` and the `send_file` tool's `to` take it; the
 * relay checks the same shapes. Its `source` is the tools' JSON Schema `pattern`.
 */
export const DESTINATION = new RegExp(DESTINATION_PATTERN);

/** The shapes of `DESTINATION`, in words. */
export { DESTINATION_SHAPES } from "../../../src/mcp/tool-definitions.js";
