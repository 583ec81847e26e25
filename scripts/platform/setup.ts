import { existsSync, readFileSync } from "node:fs";

/** A set-up step that cannot go on: printed as one line, and the command exits 1. */
export class SetupError extends Error {
  override name = "SetupError";
}

/** The settings a platform's set-up reads: the environment first, then `.dev.vars`. */
export class Settings {
  private readonly file: Record<string, string>;

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    devVarsPath: string | null,
  ) {
    this.file =
      devVarsPath && existsSync(devVarsPath) ? parseDevVars(readFileSync(devVarsPath, "utf8")) : {};
  }

  get(name: string): string | undefined {
    const value = this.env[name] || this.file[name];
    return value ? value : undefined;
  }

  /** The value, or a SetupError saying where to set it. */
  need(name: string, why: string): string {
    const value = this.get(name);
    if (!value)
      throw new SetupError(
        `${name} is not set (${why}): put it in the environment or .dev.vars, and on the relay ` +
          `with \`wrangler secret put ${name}\``,
      );
    return value;
  }
}

/** `.dev.vars` is dotenv: `NAME=value` lines, `#` comments, values optionally quoted. */
export function parseDevVars(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match || line.trimStart().startsWith("#")) continue;
    const raw = match[2]!;
    vars[match[1]!] = /^(["']).*\1$/.test(raw) ? raw.slice(1, -1) : raw;
  }
  return vars;
}

/** What a set-up prints: each step done, then what is left for the operator. */
export class Report {
  private readonly left: string[] = [];

  constructor(private readonly out: (line: string) => void) {}

  done(line: string): void {
    this.out(`✓ ${line}`);
  }

  note(line: string): void {
    this.out(`  ${line}`);
  }

  warn(line: string): void {
    this.out(`! ${line}`);
  }

  /** Prints a block as it is (a manifest to paste). */
  block(text: string): void {
    this.out(text);
  }

  leave(step: string): void {
    this.left.push(step);
  }

  finish(): void {
    if (this.left.length === 0) return;
    this.out("Left to do:");
    this.left.forEach((step, index) => this.out(`  ${index + 1}. ${step}`));
  }
}

/** The relay's answer to a request, or a SetupError when the relay cannot be reached. */
export async function callRelay(url: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(15_000) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    throw new SetupError(
      `could not reach the relay at ${new URL(url).origin} (${cause ?? String(error)})`,
    );
  }
}

/**
 * What the relay's answer on a webhook path says about its settings: 404 is a relay without
 * that platform's bot token.
 */
export function relayRefusal(
  platform: string,
  webhook: string,
  status: number,
  tokenSetting: string,
): SetupError {
  if (status === 404)
    return new SetupError(
      `the relay has no ${platform} configured (${webhook} answers 404): set ${tokenSetting} on the relay`,
    );
  return new SetupError(`the relay answered ${status} at ${webhook}`);
}
