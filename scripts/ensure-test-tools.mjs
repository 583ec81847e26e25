#!/usr/bin/env node
// Makes sure the Debian tools the tests use are installed: chromium (the share page's browser
// tests), dash and busybox (the POSIX shim's tests), openssh-server and openssh-client (a
// throwaway sshd on 127.0.0.1 for the SDK's ssh exec adapter, as root or not; ssh and scp for
// its bench), openssl (a certificate for the shim's https test). As root with apt-get it
// installs whatever is missing; otherwise it stops at once, naming the command to run.
// Idempotent: does nothing when every tool is there. The install starts no service and leaves
// none enabled at boot: the tests run their own sshd from its binary, on 127.0.0.1 only.
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, rmSync, writeFileSync } from "node:fs";
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

/**
 * Runs `install` with a policy-rc.d that forbids starting services (exit 101, Debian's "action
 * forbidden"), which invoke-rc.d and deb-systemd-invoke in the packages' scripts obey:
 * openssh-server's would start sshd on port 22. An existing policy-rc.d is the machine's and is
 * left as it is; the one written here is removed again.
 */
function withoutServiceStarts(install) {
  const policy = "/usr/sbin/policy-rc.d";
  const ours = !existsSync(policy);
  if (ours) {
    const forbid =
      "#!/bin/sh\n# airlock test set-up: start no services during its install\nexit 101\n";
    writeFileSync(policy, forbid, { mode: 0o755 });
  }
  try {
    install();
  } finally {
    if (ours) rmSync(policy, { force: true });
  }
}

/**
 * Undoes what a package's scripts did to start `service` at every boot (a systemd unit's
 * links, the SysV rc links), the way an admin's disable would: upgrades keep it disabled.
 */
function disableAtBoot(service) {
  const quiet = { stdio: "ignore" };
  if (found("deb-systemd-helper")) {
    for (const unit of [`${service}.service`, `${service}.socket`])
      spawnSync("deb-systemd-helper", ["disable", unit], quiet);
  }
  if (found("update-rc.d") && existsSync(`/etc/init.d/${service}`))
    spawnSync("update-rc.d", [service, "disable"], quiet);
  console.log(`${service} service disabled at boot again (the tests run their own sshd)`);
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
withoutServiceStarts(() => spawnSync(install[0], install.slice(1), { stdio: "inherit", env }));
if (missing.includes("openssh-server")) disableAtBoot("ssh");
// Checked afresh: a concurrent run may have installed them meanwhile, which is just as good.
const still = missingPackages();
if (still.length > 0) {
  console.error(
    `still missing after apt-get install: ${still.join(", ")}; run as root:\n  ${command}`,
  );
  process.exit(1);
}
