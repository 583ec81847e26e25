"""Driven by bench/python-hosts.bench.ts (which starts the sshd): the deepagents recipe over
Airlock's exec transport against the frameworks' own way (base64 in 64 KiB chunks through exec,
one command per chunk) and against scp, both directions, over one ControlMaster connection.
Prints one JSON line per measurement on stdout."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time
from typing import Callable, List

from airlock_deepagents import ExecTransportFiles
from airlock_sdk.exec import ssh_exec

MiB = 1024 * 1024
RAW_CHUNK = 48 * 1024  # encodes to 64 KiB of base64
ROUNDS = 3


def main() -> None:
    ssh = json.loads(os.environ["BENCH_SSH"])
    sizes = [int(s) * MiB for s in os.environ.get("BENCH_SIZES_MIB", "16,256").split(",")]
    workdir = os.environ["BENCH_DIR"]
    clean = ["-o", "SetEnv=SHLVL=1"]  # bash as the login shell then skips ~/.bashrc
    exec = ssh_exec(
        ssh["host"], user=ssh["user"], port=ssh["port"], identity_file=ssh["identityFile"],
        control_path=ssh["controlPath"], ssh_args=[*ssh["sshArgs"], *clean],
    )
    common = [
        "-o", "BatchMode=yes", "-i", ssh["identityFile"], "-o", "ControlMaster=auto",
        "-o", f"ControlPath={ssh['controlPath']}", "-o", "ControlPersist=60s", *ssh["sshArgs"], *clean,
    ]
    target = f"{ssh['user']}@{ssh['host']}"

    def remote(command: str, stdin: bytes = b"") -> bytes:
        done = subprocess.run(
            ["ssh", "-T", *common, "-p", str(ssh["port"]), target, command], input=stdin, capture_output=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"ssh {command[:60]}: {done.stderr.decode().strip()}")
        return done.stdout

    def scp(source: str, dest: str) -> None:
        subprocess.run(["scp", "-q", *common, "-P", str(ssh["port"]), source, dest], check=True)

    remote("true")  # opens the ControlMaster connection every method shares
    recipe = ExecTransportFiles(exec, root=workdir)
    # Not timed: the transport's one probe of the sandbox's tools, once per adapter.
    warm = os.path.join(workdir, "warm.txt")
    assert [r.error for r in recipe.upload_files([(warm, b"warm")])] == [None]
    assert [r.content for r in recipe.download_files([warm])] == [b"warm"]
    for size in sizes:
        data = os.urandom(size)
        want = hashlib.sha256(data).hexdigest()
        local = os.path.join(workdir, "host.bin")
        sandbox = os.path.join(workdir, "sandbox.bin")

        def landed(path: str) -> str:
            with open(path, "rb") as handle:
                return hashlib.sha256(handle.read()).hexdigest()

        def reset() -> None:
            for path in (local, sandbox, sandbox + ".b64"):
                if os.path.exists(path):
                    os.unlink(path)

        def timed(direction: str, method: str, run: Callable[[], bytes], check: Callable[[bytes], str]) -> None:
            reset()
            if direction == "inbound" and method == "scp":
                with open(local, "wb") as out:
                    out.write(data)
            if direction == "outbound":
                with open(sandbox, "wb") as out:
                    out.write(data)
            started = time.monotonic()
            got = run()
            seconds = time.monotonic() - started
            if check(got) != want:
                raise RuntimeError(f"{method} {direction} {size}: bytes differ")
            print(json.dumps({"size": size, "direction": direction, "method": method, "seconds": seconds}), flush=True)

        def chunked_in() -> bytes:
            remote(f": > {shlex.quote(sandbox)}")
            for at in range(0, size, RAW_CHUNK):
                chunk = base64.b64encode(data[at : at + RAW_CHUNK]).decode()
                remote(f"printf '%s' {shlex.quote(chunk)} | base64 -d >> {shlex.quote(sandbox)}")
            return b""

        def chunked_out() -> bytes:
            parts: List[bytes] = []
            for index in range(-(-size // RAW_CHUNK)):
                text = remote(f"dd if={shlex.quote(sandbox)} bs={RAW_CHUNK} skip={index} count=1 2>/dev/null | base64 -w0")
                parts.append(base64.b64decode(text))
            return b"".join(parts)

        def recipe_in() -> bytes:
            (result,) = recipe.upload_files([(sandbox, data)])
            assert result.error is None, result.error
            return b""

        def recipe_out() -> bytes:
            (result,) = recipe.download_files([sandbox])
            assert result.error is None and result.content is not None, result.error
            return result.content

        from_sandbox = lambda _: landed(sandbox)  # noqa: E731
        from_host = lambda _: landed(local)  # noqa: E731
        in_memory = lambda got: hashlib.sha256(got).hexdigest()  # noqa: E731
        # The recipe and scp take turns, ROUNDS times each (the median is reported); the chunks,
        # which take tens of seconds to minutes, run once.
        for _ in range(ROUNDS):
            timed("inbound", "recipe (exec transport)", recipe_in, from_sandbox)
            timed("inbound", "scp", lambda: scp(local, f"{target}:{sandbox}") or b"", from_sandbox)
        timed("inbound", "base64 chunks (64 KiB a command)", chunked_in, from_sandbox)
        for _ in range(ROUNDS):
            timed("outbound", "recipe (exec transport)", recipe_out, in_memory)
            timed("outbound", "scp", lambda: scp(f"{target}:{sandbox}", local) or b"", from_host)
        timed("outbound", "base64 chunks (64 KiB a command)", chunked_out, in_memory)
        reset()


if __name__ == "__main__":
    sys.exit(main())
