import { execFileSync } from "node:child_process";
import { chmod, mkdir, readFile, readdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * Stand-in `docker` and `kubectl` executables: they run the command they are given locally
 * (no container), record the exact argv and stdin of every call, and can flip one byte of
 * stdin or stdout on the way (a corrupted stream). `config.json` beside them says how:
 * a PATH per container or pod (to play a sandbox that lacks tools), and what to corrupt.
 */
export interface StandInConfig {
  /** PATH the command runs with, by container (docker) or pod (kubectl); default the host's. */
  paths?: Record<string, string>;
  /** Flip the byte at `at` of the command's stdin or stdout. */
  flip?: { stream: "stdin" | "stdout"; at: number };
}

export interface StandInCall {
  tool: "docker" | "kubectl";
  argv: string[];
  stdin: Buffer;
}

const SCRIPT = String.raw`
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const here = __dirname;
const tool = path.basename(process.argv[1]);
const argv = process.argv.slice(2);
const config = JSON.parse(fs.readFileSync(path.join(here, "config.json"), "utf8"));
const calls = path.join(here, "calls");
const id = String(Date.now()) + "-" + process.pid + "-" + Math.random().toString(16).slice(2);
fs.writeFileSync(path.join(calls, id + ".json"), JSON.stringify({ tool, argv }));
const record = fs.createWriteStream(path.join(calls, id + ".stdin"));
let target, command;
if (tool === "docker") {
  let i = 2; // exec -i
  while (argv[i] && argv[i].startsWith("--")) i += 2;
  target = argv[i];
  command = argv.slice(i + 1);
} else {
  const dash = argv.indexOf("--");
  target = argv[dash - 1];
  command = argv.slice(dash + 1);
}
const env = { ...process.env };
if (config.paths && config.paths[target]) env.PATH = config.paths[target];
const child = spawn(command[0], command.slice(1), { env, stdio: ["pipe", "pipe", "inherit"] });
const flip = config.flip;
function flipper(stream) {
  let seen = 0;
  return (chunk) => {
    if (flip && flip.stream === stream && flip.at >= seen && flip.at < seen + chunk.length) {
      chunk = Buffer.from(chunk);
      chunk[flip.at - seen] ^= 0x01;
    }
    seen += chunk.length;
    return chunk;
  };
}
const onStdin = flipper("stdin");
const onStdout = flipper("stdout");
child.stdin.on("error", () => {});
process.stdin.on("data", (chunk) => {
  record.write(chunk);
  if (!child.stdin.write(onStdin(chunk))) {
    process.stdin.pause();
    child.stdin.once("drain", () => process.stdin.resume());
  }
});
process.stdin.on("end", () => child.stdin.end());
child.stdout.on("data", (chunk) => process.stdout.write(onStdout(chunk)));
child.on("close", (code) => {
  record.end(() => process.stdout.write("", () => process.exit(code === null ? 1 : code)));
});
`;

/** Writes the stand-ins into `dir` (put it first on PATH); returns a reader of their calls. */
export async function installStandIns(dir: string): Promise<{
  configure(config: StandInConfig): Promise<void>;
  calls(): Promise<StandInCall[]>;
  clear(): Promise<void>;
}> {
  await mkdir(join(dir, "calls"), { recursive: true });
  for (const tool of ["docker", "kubectl"]) {
    await writeFile(join(dir, tool), `#!${process.execPath}\n${SCRIPT}`);
    await chmod(join(dir, tool), 0o755);
  }
  const configure = (config: StandInConfig) =>
    writeFile(join(dir, "config.json"), JSON.stringify(config));
  await configure({});
  return {
    configure,
    async calls() {
      const names = (await readdir(join(dir, "calls"))).filter((n) => n.endsWith(".json")).sort();
      const calls: StandInCall[] = [];
      for (const name of names) {
        const { tool, argv } = JSON.parse(await readFile(join(dir, "calls", name), "utf8")) as {
          tool: StandInCall["tool"];
          argv: string[];
        };
        const stdin = await readFile(join(dir, "calls", name.replace(/\.json$/, ".stdin")));
        calls.push({ tool, argv, stdin });
      }
      return calls;
    },
    async clear() {
      for (const name of await readdir(join(dir, "calls")))
        await import("node:fs/promises").then((fs) => fs.rm(join(dir, "calls", name)));
    },
  };
}

/**
 * A directory to use as a sandbox's whole PATH: links to the POSIX tools the transport's
 * scripts use, plus `extra` (e.g. `python3`), and nothing else (no sha256sum, openssl, gzip).
 */
export async function sandboxPath(dir: string, extra: string[]): Promise<string> {
  await mkdir(dir, { recursive: true });
  const base = [
    "sh",
    "cat",
    "tee",
    "mv",
    "ln",
    "rm",
    "chmod",
    "dirname",
    "basename",
    "wc",
    "tr",
    "dd",
  ];
  for (const tool of [...base, ...extra]) {
    const real =
      tool === "python3"
        ? execFileSync("python3", ["-c", "import sys; print(sys.executable)"], {
            encoding: "utf8",
          }).trim()
        : execFileSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).trim();
    await symlink(real, join(dir, tool));
  }
  return dir;
}
