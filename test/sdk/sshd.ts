import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { freePort } from "../support/relay";

/** A throwaway OpenSSH server on 127.0.0.1, for the current user, with a key of its own. */
export interface TestSshd {
  host: "127.0.0.1";
  port: number;
  user: string;
  identityFile: string;
  /** A ControlMaster socket path in the server's temp dir. */
  controlPath: string;
  /** The options a client needs for a host key nobody has seen before. */
  sshArgs: string[];
  dir: string;
  /** Ends the ControlMaster connections and the server; removes the temp dir. */
  stop(): Promise<void>;
}

const SSHD = "/usr/sbin/sshd";

function keygen(path: string): void {
  const made = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path]);
  if (made.status !== 0) throw new Error(`ssh-keygen failed: ${String(made.stderr)}`);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Starts `sshd -D -f <temp config>` as the current user on a free port: host key, authorized
 * key, pid file all in a temp dir; no PAM, no strict modes. Works as root (sshd then needs
 * its privilege-separation directory, made here when missing) and as a normal user.
 */
export async function startSshd(): Promise<TestSshd> {
  if (!existsSync(SSHD))
    throw new Error("sshd is missing: run `node scripts/ensure-test-tools.mjs` (openssh-server)");
  const dir = await mkdtemp(join(tmpdir(), "airlock-sshd-"));
  keygen(join(dir, "host_key"));
  keygen(join(dir, "client_key"));
  await writeFile(join(dir, "authorized_keys"), await readFile(join(dir, "client_key.pub")));
  if (process.getuid?.() === 0) await mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  const port = await freePort();
  const config = [
    "ListenAddress 127.0.0.1",
    `Port ${port}`,
    `HostKey ${join(dir, "host_key")}`,
    `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
    `PidFile ${join(dir, "sshd.pid")}`,
    "StrictModes no",
    "UsePAM no",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "PermitRootLogin prohibit-password",
    "MaxSessions 64",
    "MaxStartups 64",
    "LogLevel ERROR",
    "Subsystem sftp internal-sftp",
    // Lets a client pass SHLVL=1, so that bash as the login shell skips ~/.bashrc (which bash
    // otherwise reads for every SSH command, however slow the account made it).
    "AcceptEnv SHLVL",
  ].join("\n");
  await writeFile(join(dir, "sshd_config"), `${config}\n`);
  const child: ChildProcess = spawn(SSHD, ["-D", "-e", "-f", join(dir, "sshd_config")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4096)));
  const deadline = Date.now() + 30_000;
  while (!(await portOpen(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
      throw new Error(`sshd did not start: ${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const controlPath = join(dir, "cm-%C");
  const sshArgs = [
    "-o",
    "StrictHostKeyChecking=no",
    "-o",
    "UserKnownHostsFile=/dev/null",
    "-o",
    "LogLevel=ERROR",
  ];
  const user = userInfo().username;
  const identityFile = join(dir, "client_key");
  return {
    host: "127.0.0.1",
    port,
    user,
    identityFile,
    controlPath,
    sshArgs,
    dir,
    async stop() {
      spawnSync("ssh", [
        ...sshArgs,
        "-o",
        `ControlPath=${controlPath}`,
        "-p",
        String(port),
        "-O",
        "exit",
        `${user}@127.0.0.1`,
      ]);
      child.kill("SIGTERM");
      if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
