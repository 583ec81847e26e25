import type { RESTPostAPIChatInputApplicationCommandsJSONBody } from "discord-api-types/v10";

/**
 * The slash commands the relay answers (`npm run platform -- discord` registers them).
 * Numbers, not discord-api-types enums: its enum objects are not loaded at run time here.
 */
export const SEND_COMMAND = {
  name: "send",
  type: 1, // ApplicationCommandType.ChatInput
  description: "Hand a file to the agent working in this channel",
  options: [{ type: 11, name: "file", description: "The file to hand over", required: true }],
} satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export const AIRLOCK_COMMAND = {
  name: "airlock",
  type: 1,
  description: "Show this channel's Airlock destination id",
} satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export const DISCORD_COMMANDS = [SEND_COMMAND, AIRLOCK_COMMAND];
