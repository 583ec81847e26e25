// `npm run platform -- telegram|discord|slack|whatsapp [--relay URL] [--no-dev-vars]`: wires one
// chat platform to the relay. Reads the platform's settings from the environment, then from
// .dev.vars (not with --no-dev-vars); `--relay` (default AIRLOCK_URL, else the local relay) is the
// relay's public URL. Each step prints what it did, then what is left; a refusal is one line
// on stderr and exit 1. docs/chat-platforms.md describes each platform's steps.
import { fileURLToPath } from "node:url";
import { setUpDiscord } from "./discord";
import { Report, SetupError, Settings } from "./setup";
import { setUpSlack } from "./slack";
import { setUpTelegram } from "./telegram";
import { setUpWhatsApp } from "./whatsapp";

const PLATFORMS = {
  telegram: setUpTelegram,
  discord: setUpDiscord,
  slack: setUpSlack,
  whatsapp: setUpWhatsApp,
} as const;

const USAGE =
  "usage: npm run platform -- telegram|discord|slack|whatsapp [--relay URL] [--no-dev-vars]";

function parseArgs(argv: string[]): {
  platform: keyof typeof PLATFORMS;
  relay: string;
  devVars: boolean;
} {
  let platform: string | undefined;
  let relay = process.env.AIRLOCK_URL || "http://127.0.0.1:8787";
  let devVars = true;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--relay") relay = argv[++i] ?? "";
    else if (arg.startsWith("--relay=")) relay = arg.slice("--relay=".length);
    else if (arg === "--no-dev-vars") devVars = false;
    else if (!arg.startsWith("-") && platform === undefined) platform = arg;
    else throw new SetupError(`unknown argument ${arg}; ${USAGE}`);
  }
  if (!platform || !(platform in PLATFORMS)) throw new SetupError(USAGE);
  let url: URL;
  try {
    url = new URL(relay);
  } catch {
    throw new SetupError(
      `--relay must be the relay's URL, like https://airlock.example.com, not "${relay}"`,
    );
  }
  return {
    platform: platform as keyof typeof PLATFORMS,
    relay: url.href.replace(/\/+$/, ""),
    devVars,
  };
}

async function main(): Promise<void> {
  let name = "";
  try {
    const args = parseArgs(process.argv.slice(2));
    name = args.platform;
    const devVars = fileURLToPath(new URL("../../.dev.vars", import.meta.url));
    const settings = new Settings(process.env, args.devVars ? devVars : null);
    const report = new Report((line) => console.log(line));
    console.log(`Setting up ${name} for the relay at ${args.relay}`);
    await PLATFORMS[args.platform](args.relay, settings, report);
    report.finish();
  } catch (error) {
    if (!(error instanceof SetupError)) throw error;
    console.error(`airlock platform${name ? ` ${name}` : ""}: ${error.message}`);
    process.exitCode = 1;
  }
}

await main();
