/**
 * Ready exec adapters: `docker exec -i`, `ssh` over a ControlMaster socket, `kubectl exec -i`.
 * Each spawns the CLI with `node:child_process`; the CLI must be on the host's PATH.
 */
import { spawnCli, spawnCliWithFiles, type ExecAdapter } from "./exec.js";

/** An adapter that runs `command` with `argsFor(argv)`, streaming or with local files. */
function cliAdapter(
  label: string,
  command: string,
  argsFor: (argv: readonly string[]) => string[],
): ExecAdapter {
  return {
    label,
    run: (argv, stdin) => spawnCli(command, argsFor(argv), stdin),
    runWithFiles: (argv, files) => spawnCliWithFiles(command, argsFor(argv), files),
  };
}

/** Quotes one word for a POSIX shell: `'…'`, with `'` as `'\''`. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, "'\\''")}'`;
}

function refuseOption(what: string, value: string): void {
  if (value === "" || value.startsWith("-") || value.includes("\0"))
    throw new TypeError(`Airlock: ${what} must be non-empty and must not start with "-"`);
}

/** Options for {@link dockerExec}. */
export interface DockerExecOptions {
  /** `docker exec --user`. */
  user?: string;
  /** `docker exec --workdir`: where relative paths start. */
  workdir?: string;
  /** The docker CLI to run; default `docker` (e.g. `podman`). */
  command?: string;
}

/** Runs commands in a container with `docker exec -i <container> <argv…>`. */
export function dockerExec(container: string, options: DockerExecOptions = {}): ExecAdapter {
  refuseOption("dockerExec's container", container);
  const command = options.command ?? "docker";
  const flags = [
    ...(options.user !== undefined ? ["--user", options.user] : []),
    ...(options.workdir !== undefined ? ["--workdir", options.workdir] : []),
  ];
  return cliAdapter(`${command} exec ${container}`, command, (argv) => [
    "exec",
    "-i",
    ...flags,
    container,
    ...argv,
  ]);
}

/** Options for {@link kubectlExec}. */
export interface KubectlExecOptions {
  pod: string;
  namespace?: string;
  /** The container in the pod (`-c`), when it has several. */
  container?: string;
  /** `--context`. */
  context?: string;
  /** The kubectl CLI to run; default `kubectl`. */
  command?: string;
}

/** Runs commands in a pod with `kubectl exec -i [-n ns] [-c container] <pod> -- <argv…>`. */
export function kubectlExec(options: KubectlExecOptions): ExecAdapter {
  refuseOption("kubectlExec's pod", options.pod);
  const command = options.command ?? "kubectl";
  const flags = [
    ...(options.context !== undefined ? ["--context", options.context] : []),
    ...(options.namespace !== undefined ? ["-n", options.namespace] : []),
    ...(options.container !== undefined ? ["-c", options.container] : []),
  ];
  const where = options.namespace ? `${options.namespace}/${options.pod}` : options.pod;
  return cliAdapter(`${command} exec ${where}`, command, (argv) => [
    "exec",
    "-i",
    ...flags,
    options.pod,
    "--",
    ...argv,
  ]);
}

/** Options for {@link sshExec}. */
export interface SshExecOptions {
  host: string;
  user?: string;
  port?: number;
  /** `-i`: the private key. */
  identityFile?: string;
  /**
   * The ControlMaster socket: every command after the first reuses its connection
   * (`-o ControlMaster=auto -o ControlPath=… -o ControlPersist=…`). Strongly advised:
   * without it each command pays a full SSH handshake.
   */
  controlPath?: string;
  /** How long the master connection outlives its last command; default `60s`. */
  controlPersist?: string;
  /** More `ssh` arguments, e.g. `["-o", "StrictHostKeyChecking=accept-new"]`. */
  sshArgs?: readonly string[];
  /** The ssh CLI to run; default `ssh`. */
  command?: string;
}

/**
 * Runs commands over SSH: `ssh -T -o BatchMode=yes [ControlMaster options] host -- '<argv…>'`.
 * SSH hands the remote account's shell one command line, so each argv word is quoted for a
 * POSIX shell.
 */
export function sshExec(options: SshExecOptions): ExecAdapter {
  refuseOption("sshExec's host", options.host);
  if (options.user !== undefined) refuseOption("sshExec's user", options.user);
  const command = options.command ?? "ssh";
  const target = options.user ? `${options.user}@${options.host}` : options.host;
  const args = [
    "-T",
    "-o",
    "BatchMode=yes",
    ...(options.port !== undefined ? ["-p", String(options.port)] : []),
    ...(options.identityFile !== undefined ? ["-i", options.identityFile] : []),
    ...(options.controlPath !== undefined
      ? [
          "-o",
          "ControlMaster=auto",
          "-o",
          `ControlPath=${options.controlPath}`,
          "-o",
          `ControlPersist=${options.controlPersist ?? "60s"}`,
        ]
      : []),
    ...(options.sshArgs ?? []),
    target,
    "--",
  ];
  return cliAdapter(`ssh ${target}`, command, (argv) => [...args, argv.map(shellQuote).join(" ")]);
}
