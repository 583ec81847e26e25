"""The exec transport's refusals from test/exec-cases.json (the TypeScript SDK's tests run the
same list): each one's code and exact message, and that nothing was left behind."""
from __future__ import annotations

import json
import os
import re
import secrets
import socket
import unittest
from typing import Any, Dict

from airlock_sdk.exec import (
    CliAdapter, collect_to_local_file, docker_exec, push_bytes, push_local_file, push_stream, ssh_exec,
)
from airlock_sdk.exec.push import TRAILED_FROM

from support import (
    MiB, StandIns, WORK_DIR, fresh_dir, needs_relay, needs_stand_ins, operator, refusal, sandbox_path, sha256,
)

with open(os.path.join(os.path.dirname(__file__), "..", "..", "test", "exec-cases.json")) as handle:
    CASES: Dict[str, Dict[str, str]] = json.load(handle)["cases"]

RANDOM = b"\0" + secrets.token_bytes(MiB - 1)
FLIP_AT = 100_000


def case(name: str, **values: Any) -> Dict[str, Any]:
    found = CASES[name]
    message = re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), found["message"])
    return {"status": 0, "code": found["code"], "message": message}


def flipped(data: bytes, at: int) -> bytes:
    copy = bytearray(data)
    copy[at] ^= 0x01
    return bytes(copy)


def no_stdin(adapter: CliAdapter) -> CliAdapter:
    adapter.stdin = False
    return adapter


@needs_relay
@needs_stand_ins
class ExecRefusals(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.airlock = operator()
        cls.session_id = cls.airlock.create_session(quota_bytes=50 * MiB)["sessionId"]
        StandIns.configure({})

    def seeded(self, data: bytes, name: str) -> str:
        return self.airlock.seed_inbox(self.session_id, data, name=name)["file"]["fileId"]

    def file_count(self) -> int:
        return len(self.airlock.list_files(session_id=self.session_id))

    def test_every_case_is_run_here(self) -> None:
        names = {n[len("test_"):] for n in dir(self) if n.startswith("test_")}
        self.assertEqual(set(CASES) - names, set())

    def test_exec_unavailable(self) -> None:
        folder = fresh_dir("unavailable-")
        cli = os.path.join(WORK_DIR, "no-such-cli")
        file_id = self.seeded(b"x\n", "x.txt")
        got = refusal(lambda: self.airlock.push_file(docker_exec("box", command=cli), file_id, f"{folder}/x.txt"))
        self.assertEqual(got, case("exec_unavailable", cli=cli))
        self.assertEqual(os.listdir(folder), [])

    def frozen(self, script: str) -> CliAdapter:
        return CliAdapter("frozen box", "sh", lambda argv: ["-c", script])

    def test_exec_failed_said(self) -> None:
        file_id = self.seeded(b"x\n", "x.txt")
        said = self.frozen('echo "starting" >&2; echo "sandbox is frozen" >&2; exit 7')
        self.assertEqual(refusal(lambda: self.airlock.push_file(said, file_id, "/workspace/x.txt")), case("exec_failed_said"))

    def test_exec_failed_silent(self) -> None:
        before = self.file_count()
        silent = self.frozen("exit 7")
        got = refusal(lambda: self.airlock.collect_file(silent, self.session_id, "/workspace/x.txt"))
        self.assertEqual(got, case("exec_failed_silent"))
        self.assertEqual(self.file_count(), before)

    def test_exec_failed_ssh(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        adapter = ssh_exec(
            "127.0.0.1", user="agent", port=port,
            ssh_args=["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"],
        )
        file_id = self.seeded(b"x\n", "x.txt")
        got = refusal(lambda: self.airlock.push_file(adapter, file_id, "/workspace/x.txt"))
        self.assertEqual(got, case("exec_failed_ssh", port=port))

    def test_sandbox_cannot_verify(self) -> None:
        bare = sandbox_path(os.path.join(WORK_DIR, "py-bare-bin"), [])
        StandIns.configure({"paths": {"bare": bare}})
        try:
            folder = fresh_dir("bare-")
            with open(os.path.join(folder, "out.txt"), "w") as out:
                out.write("made in the sandbox\n")
            file_id = self.seeded(b"x\n", "x.txt")
            adapter = docker_exec("bare")
            self.assertEqual(
                refusal(lambda: self.airlock.push_file(adapter, file_id, f"{folder}/x.txt")), case("sandbox_cannot_verify")
            )
            before = self.file_count()
            self.assertEqual(
                refusal(lambda: self.airlock.collect_file(adapter, self.session_id, f"{folder}/out.txt")),
                case("sandbox_cannot_verify"),
            )
            self.assertEqual(self.file_count(), before)
            self.assertEqual(os.listdir(folder), ["out.txt"])
        finally:
            StandIns.configure({})

    def test_sandbox_cannot_decode(self) -> None:
        sha_only = sandbox_path(os.path.join(WORK_DIR, "py-sha-only-bin"), ["sha256sum"])
        StandIns.configure({"paths": {"sha-only": sha_only}})
        try:
            folder = fresh_dir("no-decoder-")
            file_id = self.seeded(b"x\n", "x.txt")
            got = refusal(lambda: self.airlock.push_file(no_stdin(docker_exec("sha-only")), file_id, f"{folder}/x.txt"))
            self.assertEqual(got, case("sandbox_cannot_decode"))
            self.assertEqual(os.listdir(folder), [])
        finally:
            StandIns.configure({})

    def test_too_large_for_base64(self) -> None:
        StandIns.clear()
        folder = fresh_dir("too-large-")
        target = f"{folder}/part.bin"
        file_id = self.seeded(RANDOM[:300_000], "part.bin")
        got = refusal(
            lambda: self.airlock.push_file(no_stdin(docker_exec("box")), file_id, target, max_base64_bytes=100_000)
        )
        self.assertEqual(got, case("too_large_for_base64", target=target, size=300000, limit=100000, commands=3))
        pulled = []

        def endless():
            while True:
                pulled.append(1)
                yield bytes(64 * 1024)

        size = 16 * MiB + 1
        got = refusal(lambda: push_stream(no_stdin(docker_exec("box")), endless(), target, sha256="0" * 64, size=size))
        self.assertEqual(got, case("too_large_for_base64", target=target, size=size, limit=16 * MiB, commands=342))
        self.assertLessEqual(len(pulled), 1)
        self.assertEqual(StandIns.calls(), [])
        self.assertEqual(os.listdir(folder), [])

    def test_sandbox_file_unreadable(self) -> None:
        folder = fresh_dir("missing-")
        before = self.file_count()
        for path in (f"{folder}/no-such-file", folder):
            got = refusal(lambda: self.airlock.collect_file(docker_exec("box"), self.session_id, path))
            self.assertEqual(got, case("sandbox_file_unreadable", path=path))
        self.assertEqual(self.file_count(), before)

    def test_sandbox_cannot_write(self) -> None:
        folder = fresh_dir("no-dir-")
        target = f"{folder}/missing/x.txt"
        file_id = self.seeded(b"x\n", "x.txt")
        got = refusal(lambda: self.airlock.push_file(docker_exec("box"), file_id, target))
        self.assertEqual(got, case("sandbox_cannot_write", target=target, dir=f"{folder}/missing"))
        self.assertEqual(os.listdir(folder), [])

    def test_target_exists(self) -> None:
        folder = fresh_dir("exists-")
        target = f"{folder}/config.json"
        with open(target, "w") as out:
            out.write("mine\n")
        file_id = self.seeded(b"theirs\n", "config.json")
        for adapter in (docker_exec("box"), no_stdin(docker_exec("box"))):
            got = refusal(lambda: self.airlock.push_file(adapter, file_id, target))
            self.assertEqual(got, case("target_exists", target=target))
        with open(target) as back:
            self.assertEqual(back.read(), "mine\n")
        self.assertEqual(os.listdir(folder), ["config.json"])

    def test_transfer_mismatch_push(self) -> None:
        folder = fresh_dir("mismatch-in-")
        target = f"{folder}/random.bin"
        file_id = self.seeded(RANDOM, "random.bin")
        local = os.path.join(fresh_dir("mismatch-local-"), "local.bin")
        with open(local, "wb") as out:
            out.write(RANDOM)
        StandIns.configure({"flip": {"stream": "stdin", "at": FLIP_AT}})
        try:
            want = case("transfer_mismatch_push", target=target, got=sha256(flipped(RANDOM, FLIP_AT)), want=sha256(RANDOM))
            self.assertEqual(refusal(lambda: self.airlock.push_file(docker_exec("box"), file_id, target)), want)
            # A local file handed to the CLI as its stdin: the same refusal.
            self.assertEqual(refusal(lambda: push_local_file(docker_exec("box"), local, target, compress="never")), want)
            # Bytes from memory, their SHA-256 sent after them (hashed on the way): the same refusal.
            self.assertEqual(refusal(lambda: push_bytes(docker_exec("box"), RANDOM, target)), want)
        finally:
            StandIns.configure({})
        self.assertEqual(os.listdir(folder), [])

    def test_push_bytes_refuses_a_damaged_trailing_sha256(self) -> None:
        """push_bytes sends the SHA-256 after the bytes: one flipped there is refused too."""
        self.assertGreaterEqual(len(RANDOM), TRAILED_FROM)
        folder = fresh_dir("trailer-")
        target = f"{folder}/random.bin"
        digest = sha256(RANDOM)
        digit = next(i for i, c in enumerate(digest) if c.isdigit())  # a digit flips to a digit
        said = f"push to {target} in docker exec box: "
        for at, message in (
            (digit, f"SHA-256 mismatch: received {digest}, expected {flipped(digest.encode(), digit).decode()}"),
            (64, "the SHA-256 after the bytes did not arrive intact"),  # its newline
        ):
            StandIns.configure({"flip": {"stream": "stdin", "at": len(RANDOM) + at}})
            try:
                got = refusal(lambda: push_bytes(docker_exec("box"), RANDOM, target))
            finally:
                StandIns.configure({})
            want = {"status": 0, "code": "transfer_mismatch", "message": said + message + "; nothing was kept"}
            self.assertEqual(got, want)
            self.assertEqual(os.listdir(folder), [])

    def test_transfer_mismatch_full_disk(self) -> None:
        full_disk = sandbox_path(os.path.join(WORK_DIR, "py-full-disk-bin"), ["sha256sum"])
        os.unlink(os.path.join(full_disk, "cat"))
        with open(os.path.join(full_disk, "cat"), "w") as script:
            script.write('#!/bin/sh\ndd of=/dev/null 2>/dev/null\necho "cat: write error: No space left on device" >&2\nexit 1\n')
        os.chmod(os.path.join(full_disk, "cat"), 0o755)
        StandIns.configure({"paths": {"full-disk": full_disk}})
        try:
            folder = fresh_dir("full-disk-")
            target = f"{folder}/random.bin"
            file_id = self.seeded(RANDOM, "random.bin")
            got = refusal(lambda: self.airlock.push_file(docker_exec("full-disk"), file_id, target))
            self.assertEqual(got, case("transfer_mismatch_full_disk", target=target, size=len(RANDOM)))
            got = refusal(lambda: push_bytes(docker_exec("full-disk"), RANDOM, target))
            self.assertEqual(got, case("transfer_mismatch_full_disk", target=target, size=len(RANDOM)))
            self.assertEqual(os.listdir(folder), [])
        finally:
            StandIns.configure({})

    def test_transfer_mismatch_collect(self) -> None:
        folder = fresh_dir("mismatch-out-")
        path = f"{folder}/random.bin"
        with open(path, "wb") as out:
            out.write(RANDOM)
        header = f"airlock-collect 2 {len(RANDOM)} identity\n"
        before = self.file_count()
        StandIns.configure({"flip": {"stream": "stdout", "at": FLIP_AT}})
        try:
            got = refusal(lambda: self.airlock.collect_file(docker_exec("box"), self.session_id, path))
            self.assertEqual(
                got,
                case("transfer_mismatch_collect", path=path, size=len(RANDOM),
                     got=sha256(flipped(RANDOM, FLIP_AT - len(header))), want=sha256(RANDOM)),
            )
            # Onto local disk, the header on stderr: the bytes start at offset 0.
            back = f"{folder}/back.bin"
            got = refusal(lambda: collect_to_local_file(docker_exec("box"), path, back, compress="never"))
            self.assertEqual(
                got,
                case("transfer_mismatch_collect", path=path, size=len(RANDOM),
                     got=sha256(flipped(RANDOM, FLIP_AT)), want=sha256(RANDOM)),
            )
        finally:
            StandIns.configure({})
        self.assertEqual(self.file_count(), before)
        self.assertEqual(os.listdir(folder), ["random.bin"])


if __name__ == "__main__":
    unittest.main()
