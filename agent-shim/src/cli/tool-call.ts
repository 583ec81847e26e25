import type { AsyncLocalStorage } from "node:async_hooks";
import { CliError } from "./errors.js";

/**
 * The MCP tool call the running code works for, when `airlock mcp` runs it: the signal that
 * cancels it and where its progress goes. The CLI commands run outside any call and see none.
 * Carried by an AsyncLocalStorage, so the upload and download code deep below a tool reads it
 * without every function taking it as an argument.
 */
export interface ToolCall {
  /** Aborted when the client cancels the call (`notifications/cancelled`) or goes away. */
  signal?: AbortSignal;
  /** Bytes moved so far out of `total`, for `notifications/progress`. */
  progress?: (done: number, total: number, label: string) => void;
}

/** The call is cancelled: what a request refused for that reason rejects with. */
export class CancelledError extends CliError {
  constructor() {
    super("cancelled");
  }
}

// Created on the first call, so that the commands never load node:async_hooks.
let storage: AsyncLocalStorage<ToolCall> | undefined;

/** The tool call this code runs for, if any. */
export function currentCall(): ToolCall | undefined {
  return storage?.getStore();
}

/** Runs `fn` on behalf of `call`. */
export function runInCall<T>(call: ToolCall, fn: () => Promise<T>): Promise<T> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, by design
  const { AsyncLocalStorage } = require("node:async_hooks") as typeof import("node:async_hooks");
  storage ??= new AsyncLocalStorage<ToolCall>();
  return storage.run(call, fn);
}

/**
 * The signal an HTTP request is cut off by, beside its own. A request that changes something on
 * the relay (any method but GET and PUT: declaring, completing, delivering, deleting) is not
 * started once the call is cancelled, but once started it runs to its end, so that the call
 * always knows what it registered and can take it back; a download (GET) or a PUT of stored
 * bytes is cut off at once.
 */
export function cancelSignal(
  method: string,
  own: AbortSignal | undefined,
): AbortSignal | undefined {
  const signal = currentCall()?.signal;
  if (signal === undefined) return own;
  if (signal.aborted) throw new CancelledError();
  if (method !== "GET" && method !== "PUT") return own;
  if (own === undefined) return signal;
  const both = new AbortController();
  for (const one of [own, signal]) {
    if (one.aborted) both.abort(one.reason);
    else one.addEventListener("abort", () => both.abort(one.reason), { once: true });
  }
  return both.signal;
}
