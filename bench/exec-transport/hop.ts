import { spawn } from "node:child_process";
import { sshExec, type ExecAdapter } from "../../sdk/src/node";
import type { TestSshd } from "../../test/sdk/sshd";

/** The SSH hop the exec-transport bench measures over: one ControlMaster shared by ssh and scp. */
/** Runs a local command to its end; rejects on a non-zero exit. Returns stdout. */
export function run(command: string, args: string[], stdin?: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0
        ? resolve(Buffer.concat(out))
        : reject(new Error(`${command} exited ${code}: ${err.trim()}`)),
    );
    child.stdin.end(stdin);
  });
}

export interface Hop {
  sshd: TestSshd;
  exec: ExecAdapter;
  /** ssh options shared by ssh and scp: the same key and ControlMaster socket. */
  common: string[];
  target: string;
}

/** The hop to `sshd`; `shellArgs` are extra ssh options (the clean-shell SetEnv, or none). */
export function hopOf(sshd: TestSshd, shellArgs: string[]): Hop {
  const common = [
    "-o",
    "BatchMode=yes",
    "-i",
    sshd.identityFile,
    "-o",
    "ControlMaster=auto",
    "-o",
    `ControlPath=${sshd.controlPath}`,
    "-o",
    "ControlPersist=60s",
    ...sshd.sshArgs,
    ...shellArgs,
  ];
  const exec = sshExec({
    host: sshd.host,
    user: sshd.user,
    port: sshd.port,
    identityFile: sshd.identityFile,
    controlPath: sshd.controlPath,
    sshArgs: [...sshd.sshArgs, ...shellArgs],
  });
  return { sshd, exec, common, target: `${sshd.user}@${sshd.host}` };
}

/** One remote shell command over the hop, as a framework's exec tool runs it. */
export function remote(hop: Hop, command: string): Promise<Buffer> {
  return run("ssh", ["-T", ...hop.common, "-p", String(hop.sshd.port), hop.target, command]);
}

/**
 * scp's legacy protocol: a remote `scp` started through the account's shell, as every exec
 * transport command is (plain scp speaks SFTP to the test sshd's in-process internal-sftp, so
 * it starts no process in the sandbox at all). Shown for reference; the targets are plain scp's.
 */
export const SCP_LEGACY = "scp -O (legacy protocol, a remote scp process)";

/** scp over the hop's ControlMaster, from `source` to `target` (one of them `remotePath`'s). */
export async function scp(
  hop: Hop,
  flags: string[],
  source: string,
  target: string,
): Promise<void> {
  await run("scp", [...flags, "-q", ...hop.common, "-P", String(hop.sshd.port), source, target]);
}

export const remotePath = (hop: Hop, path: string) => `${hop.target}:${path}`;
