#!/usr/bin/env node
// Makes sure the Debian tools the tests use are installed: chromium (the share page's browser
// tests), dash and busybox (the POSIX shim's tests), openssh-server and openssh-client (a
// throwaway sshd on 127.0.0.1 for the SDK's ssh exec adapter, as root or not; ssh and scp for
// its bench), openssl (a certificate for the shim's https test). As root with apt-get it
// installs whatever is missing; otherwise it stops at once, naming the command to run.
// Idempotent: does nothing when every tool is there.
import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** Debian package → the program it provides (an absolute path, or a name looked up on PATH). */
const TOOLS = {
  chromium: "/usr/bin/chromium",
  dash: "dash",
  busybox: "busybox",
  "openssh-server": "/usr/sbin/sshd",
  "openssh-client": "ssh",
  openssl: "openssl",
};

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function found(program) {
  if (program.includes("/")) return executable(program);
  return (process.env.PATH ?? "")
    .split(delimiter)
    .some((dir) => dir && executable(join(dir, program)));
}

const missingPackages = () => Object.keys(TOOLS).filter((pkg) => !found(TOOLS[pkg]));

const missing = missingPackages();
if (missing.length === 0) process.exit(0);

const install = [
  "apt-get",
  "install",
  "-y",
  "--no-install-recommends",
  // Another test run may be installing at the same time: wait for its lock, not fail.
  "-o",
  "DPkg::Lock::Timeout=300",
  ...missing,
];
const command = `apt-get update && DEBIAN_FRONTEND=noninteractive ${install.join(" ")}`;

if (process.getuid?.() !== 0 || !found("apt-get")) {
  console.error(
    `The tests need ${missing.join(", ")}, which ${missing.length === 1 ? "is" : "are"} not installed.\n` +
      (found("apt-get")
        ? `Install ${missing.length === 1 ? "it" : "them"} (as root) and run the tests again:\n  sudo sh -c '${command}'`
        : `Install ${missing.length === 1 ? "it" : "them"} with your system's package manager and run the tests again.`),
  );
  process.exit(1);
}

console.log(`installing test tools (${missing.join(", ")}) with apt-get`);
const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
// A failed update (a concurrent one holding the lists lock, a mirror down) may still leave
// lists good enough to install from, so only the install's outcome counts.
spawnSync("apt-get", ["update"], { stdio: "inherit", env });
spawnSync(install[0], install.slice(1), { stdio: "inherit", env });
// Checked afresh: a concurrent run may have installed them meanwhile, which is just as good.
const still = missingPackages();
if (still.length > 0) {
  console.error(
    `still missing after apt-get install: ${still.join(", ")}; run as root:\n  ${command}`,
  );
  process.exit(1);
}
