import { execError, type AirlockError, type ExecErrorCode } from "../errors.js";
import { lastLine, type ExecAdapter, type ExecExit } from "./exec.js";
import {
  PROBED_TOOLS,
  PROBE_SCRIPT,
  commandsFor,
  type SandboxCommands,
  type Tool,
} from "./sandbox-scripts.js";

/** Stdout kept from a command whose output is a few lines (a probe, a path, `ok`). */
const SMALL_OUTPUT = 64 * 1024;

/** Runs a command whose stdout is short text; returns it with how the command ended. */
export async function runSmall(
  exec: ExecAdapter,
  argv: readonly string[],
  stdin: ReadableStream<Uint8Array> | null = null,
): Promise<ExecExit & { stdout: string }> {
  const run = exec.run(argv, stdin);
  const decoder = new TextDecoder();
  let stdout = "";
  const reader = run.stdout.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (stdout.length < SMALL_OUTPUT) stdout += decoder.decode(value, { stream: true });
  }
  const exit = await run.exit;
  return { ...exit, stdout };
}

/** A command in the sandbox that failed: its exit code and the last line it wrote to stderr. */
export function execFailure(
  exec: ExecAdapter,
  what: string,
  exit: ExecExit,
  code: ExecErrorCode = "exec_failed",
): AirlockError {
  const said = lastLine(exit.stderr).replace(/^airlock: /, "");
  return execError(code, `${what} in ${exec.label}: ${said || `exit code ${exit.code}`}`);
}

const probes = new WeakMap<ExecAdapter, Promise<SandboxCommands>>();

/**
 * What the sandbox can run to hash, inflate, deflate and decode: asked once per adapter
 * (one command), then remembered for as long as the adapter lives.
 */
export function sandboxCommands(exec: ExecAdapter): Promise<SandboxCommands> {
  let probe = probes.get(exec);
  if (!probe) {
    probe = (async () => {
      const exit = await runSmall(exec, ["sh", "-c", PROBE_SCRIPT]);
      if (exit.code !== 0) throw execFailure(exec, "probing for tools", exit);
      const known = new Set<string>(PROBED_TOOLS);
      const tools = new Set(
        exit.stdout.split("\n").filter((line): line is Tool => known.has(line.trim())),
      );
      return commandsFor(tools);
    })();
    probes.set(exec, probe);
    probe.catch(() => probes.delete(exec));
  }
  return probe;
}

/** The sandbox's SHA-256 command, or the refusal to move bytes that cannot be checked there. */
export async function withHasher(exec: ExecAdapter): Promise<SandboxCommands & { sha256: string }> {
  const commands = await sandboxCommands(exec);
  const { sha256 } = commands;
  if (!sha256)
    throw execError(
      "sandbox_cannot_verify",
      `${exec.label} has none of sha256sum, openssl, python3 or node to check a SHA-256; nothing was moved`,
    );
  return { ...commands, sha256 };
}
