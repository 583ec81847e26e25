import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { freePort } from "../support/free-port";

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

/** The account the tests run as: sshd lets in only that one when it is not root. */
function currentAccount(): { user: string; shell: string } {
  let account: { username: string; shell: string | null };
  try {
    account = userInfo();
  } catch {
    throw new Error(
      `the ssh tests log in as the account they run as, but uid ${process.getuid?.()} has no entry in the passwd database`,
    );
  }
  const shell = account.shell ?? "";
  // sshd runs every command through the account's login shell.
  if (!shell || /(nologin|\/false)$/.test(shell))
    throw new Error(
      `the ssh tests log in as ${account.username}, whose login shell (${shell || "none"}) runs no commands: run them as an account with a shell such as /bin/sh`,
    );
  return { user: account.username, shell };
}

/**
 * Whether the account's password is locked (`!…` in /etc/shadow, as root's is on many
 * systems). sshd without PAM refuses such an account even a key; only a root sshd can read
 * the file and checks it, so only then does the server need PAM (which lets the key in).
 */
function passwordLocked(user: string): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    const entry = readFileSync("/etc/shadow", "utf8")
      .split("\n")
      .find((line) => line.startsWith(`${user}:`));
    return entry?.split(":")[1]?.startsWith("!") ?? false;
  } catch {
    return false;
  }
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
 * key, pid file all in a temp dir; no strict modes, no PAM (unless root's password is locked).
 * Works as root (sshd then needs its privilege-separation directory, made here when missing)
 * and as a normal user (an unprivileged sshd lets in only that user, which is who logs in).
 * Logs in once before returning, so that a server that cannot serve the tests says why here.
 */
/** Whether sshd came up on `port` (it says so, and the port answers) within 30 s. */
async function cameUp(sshd: ChildProcess, port: number, log: () => string): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  // Only once sshd says it listens: another program may hold the port.
  while (!(/Server listening on 127\.0\.0\.1/.test(log()) && (await portOpen(port)))) {
    if (sshd.exitCode !== null || Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

export async function startSshd(): Promise<TestSshd> {
  if (!existsSync(SSHD))
    throw new Error("sshd is missing: run `node scripts/ensure-test-tools.mjs` (openssh-server)");
  const { user } = currentAccount();
  const dir = await mkdtemp(join(tmpdir(), "airlock-sshd-"));
  keygen(join(dir, "host_key"));
  keygen(join(dir, "client_key"));
  await writeFile(join(dir, "authorized_keys"), await readFile(join(dir, "client_key.pub")));
  if (process.getuid?.() === 0) await mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  const configFor = (port: number) =>
    [
      "ListenAddress 127.0.0.1",
      `Port ${port}`,
      `HostKey ${join(dir, "host_key")}`,
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      "StrictModes no",
      `UsePAM ${passwordLocked(user) ? "yes" : "no"}`,
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PermitRootLogin prohibit-password",
      "MaxSessions 64",
      "MaxStartups 64",
      "LogLevel INFO",
      "Subsystem sftp internal-sftp",
      // Lets a client pass SHLVL=1, so that bash as the login shell skips ~/.bashrc (which bash
      // otherwise reads for every SSH command, however slow the account made it).
      "AcceptEnv SHLVL",
    ].join("\n");
  // A port found free can be taken before sshd binds it: then it starts again on another.
  let port = 0;
  let child: ChildProcess;
  let log = "";
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    await writeFile(join(dir, "sshd_config"), `${configFor(port)}\n`);
    const started: ChildProcess = spawn(SSHD, ["-D", "-e", "-f", join(dir, "sshd_config")], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    log = "";
    started.stderr?.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4096)));
    if (await cameUp(started, port, () => log)) {
      child = started;
      break;
    }
    started.kill("SIGKILL");
    if (attempt < 3 && /address already in use/i.test(log)) continue;
    await rm(dir, { recursive: true, force: true });
    throw new Error(`sshd did not start: ${log}`);
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
  const identityFile = join(dir, "client_key");
  const login = spawnSync(
    "ssh",
    [
      "-T",
      "-o",
      "BatchMode=yes",
      "-i",
      identityFile,
      "-p",
      String(port),
      ...sshArgs,
      `${user}@127.0.0.1`,
      "--",
      "exit 0",
    ],
    { encoding: "utf8", timeout: 60_000 },
  );
  if (login.status !== 0) {
    child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw new Error(
      `could not log in to the test sshd as ${user} (ssh exit ${login.status}): ${login.stderr.trim()}\nsshd: ${log.trim()}`,
    );
  }
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
