"""The exec transport's round trips, byte-exact, over a real sshd (ControlMaster) and the
stand-in docker and kubectl (which run the command here and record argv and stdin)."""
from __future__ import annotations

import gzip
import os
import secrets
import stat
import unittest
from typing import Any, Callable, Dict, List

from airlock_sdk import AirlockError
from airlock_sdk.exec import (
    ExecAdapter, collect_bytes, collect_to_local_file, docker_exec, kubectl_exec, push_bytes, push_local_file,
)

from support import (
    MiB, STANDIN_BIN, WORK_DIR, StandIns, fresh_dir, needs_relay, needs_sshd, needs_stand_ins, operator, refusal, sandbox_path,
    sha256, ssh_adapter,
)

MARKER = b"AIRLOCK-MARKER-7f3e9c"
RANDOM = MARKER + secrets.token_bytes(MiB + MiB // 2)  # over the 1 MiB quota of the refusal case
TEXT = b"".join(b"%s line %d: the quick brown fox %d jumps\n" % (MARKER, i, i % 97) for i in range(24_000))


class RoundTrips:
    """Mixed into one TestCase per adapter."""

    adapter: Callable[[], ExecAdapter]
    airlock: Any
    session_id: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.airlock = operator()
        cls.session_id = cls.airlock.create_session(quota_bytes=200 * MiB)["sessionId"]
        if STANDIN_BIN:
            StandIns.configure({})

    def seeded(self, data: bytes, name: str) -> str:
        return self.airlock.seed_inbox(self.session_id, data, name=name)["file"]["fileId"]

    def test_pushes_and_collects_relay_files_byte_exact(self) -> None:
        exec = type(self).adapter()
        for kind, data, compress, transfer in (("random", RANDOM, "auto", "identity"), ("text", TEXT, "always", "gzip")):
            folder = fresh_dir(f"push-{kind}-")
            target = f"{folder}/{kind}.bin"
            pushed = self.airlock.push_file(exec, self.seeded(data, f"{kind}.bin"), target, compress=compress)
            self.assertEqual((pushed.transfer, pushed.size, pushed.sha256), (transfer, len(data), sha256(data)))
            with open(target, "rb") as back:
                self.assertEqual(sha256(back.read()), sha256(data))
            self.assertNotEqual(stat.S_IMODE(os.stat(target).st_mode), 0o444)
            self.assertEqual(os.listdir(folder), [f"{kind}.bin"])
            before = len(self.airlock.list_files(session_id=self.session_id))
            record = self.airlock.collect_file(exec, self.session_id, target, compress=compress)
            self.assertEqual((record["sha256"], record["size"], record["name"]), (sha256(data), len(data), f"{kind}.bin"))
            self.assertEqual(len(self.airlock.list_files(session_id=self.session_id)), before + 1)
            with self.airlock.download(record["fileId"]) as answer:
                self.assertEqual(sha256(answer.read()), sha256(data))

    def test_pushes_a_local_file_and_collects_onto_local_disk(self) -> None:
        exec = type(self).adapter()
        for kind, data, compress, transfer in (("random", RANDOM, "never", "identity"), ("text", TEXT, "always", "gzip")):
            folder = fresh_dir(f"local-{kind}-")
            local = f"{folder}/local.bin"
            with open(local, "wb") as out:
                out.write(data)
            pushed = push_local_file(exec, local, f"{folder}/in-sandbox.bin", compress=compress)
            self.assertEqual((pushed.transfer, pushed.sha256), (transfer, sha256(data)))
            collected = collect_to_local_file(exec, f"{folder}/in-sandbox.bin", f"{folder}/back.bin", compress=compress)
            self.assertEqual((collected.transfer, collected.size, collected.sha256), (transfer, len(data), sha256(data)))
            with open(f"{folder}/back.bin", "rb") as back:
                self.assertEqual(sha256(back.read()), sha256(data))
            self.assertEqual(collect_bytes(exec, local), data)
            got = refusal(lambda: push_local_file(exec, local, f"{folder}/in-sandbox.bin"))
            self.assertEqual(got["code"], "target_exists")
            got = refusal(lambda: collect_to_local_file(exec, f"{folder}/not-there.bin", f"{folder}/never.bin"))
            self.assertEqual(got["code"], "sandbox_file_unreadable")
            self.assertEqual(sorted(os.listdir(folder)), ["back.bin", "in-sandbox.bin", "local.bin"])

    def test_readonly_and_overwrite(self) -> None:
        exec = type(self).adapter()
        folder = fresh_dir("readonly-")
        target = f"{folder}/config.json"
        push_bytes(exec, b'{"model":"x"}\n', target, readonly=True)
        self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o444)
        got = refusal(lambda: push_bytes(exec, b"something else\n", target))
        self.assertEqual(got["code"], "target_exists")
        with open(target, "rb") as back:
            self.assertEqual(back.read(), b'{"model":"x"}\n')
        push_bytes(exec, b"something else\n", target, overwrite=True)
        with open(target, "rb") as back:
            self.assertEqual(back.read(), b"something else\n")
        self.assertEqual(os.listdir(folder), ["config.json"])


@needs_relay
@needs_sshd
class OverSsh(RoundTrips, unittest.TestCase):
    adapter = staticmethod(ssh_adapter)

    def test_quotes_every_argument_for_the_remote_shell(self) -> None:
        folder = fresh_dir("quotes-")
        name = "it's $(touch pwned) \"quoted\" ; a.txt"
        push_bytes(ssh_adapter(), b"quoted\n", f"{folder}/{name}")
        self.assertEqual(os.listdir(folder), [name])


def _box() -> ExecAdapter:
    return docker_exec("box")


def _pod() -> ExecAdapter:
    return kubectl_exec("pod-1", namespace="agents", container="main")


@needs_relay
@needs_stand_ins
class OverDocker(RoundTrips, unittest.TestCase):
    adapter = staticmethod(_box)

    def setUp(self) -> None:
        StandIns.configure({})
        StandIns.clear()

    def recorded(self) -> List[Dict[str, Any]]:
        calls = StandIns.calls()
        for call in calls:
            self.assertNotIn(MARKER.decode(), " ".join(call["argv"]))
        return calls

    def test_runs_docker_exec_i_with_the_bytes_on_stdin_only(self) -> None:
        folder = fresh_dir("argv-")
        exec = docker_exec("box", user="agent")
        self.airlock.push_file(exec, self.seeded(TEXT, "text.txt"), f"{folder}/text.txt")
        calls = self.recorded()
        self.assertEqual([c["argv"][:7] for c in calls], [["exec", "-i", "--user", "agent", "box", "sh", "-c"]] * 2)
        push = calls[1]
        self.assertEqual(push["argv"][8:11], ["airlock-push", f"{folder}/text.txt", sha256(TEXT)])
        self.assertEqual(push["argv"][14:], ["gzip", str(len(TEXT))])
        self.assertEqual(sha256(gzip.decompress(push["stdin"])), sha256(TEXT))
        self.assertLess(len(push["stdin"]), len(TEXT) / 4)

    def test_hands_docker_a_local_file_as_its_stdin_and_stdout(self) -> None:
        folder = fresh_dir("fd-")
        with open(f"{folder}/local.bin", "wb") as out:
            out.write(RANDOM)
        exec = docker_exec("box")
        push_local_file(exec, f"{folder}/local.bin", f"{folder}/pushed.bin", compress="never")
        collect_to_local_file(exec, f"{folder}/pushed.bin", f"{folder}/back.bin", compress="never")
        probe, push, collect = self.recorded()
        self.assertEqual(sha256(push["stdin"]), sha256(RANDOM))
        self.assertEqual(collect["argv"][6:], ["airlock-collect", f"{folder}/pushed.bin", "never", "raw"])
        self.assertEqual(collect["stdin"], b"")

    def test_runs_kubectl_exec_with_namespace_and_container(self) -> None:
        folder = fresh_dir("kargv-")
        with open(f"{folder}/out.bin", "wb") as out:
            out.write(RANDOM)
        record = self.airlock.collect_file(_pod(), self.session_id, f"{folder}/out.bin")
        self.assertEqual(record["sha256"], sha256(RANDOM))
        calls = self.recorded()
        self.assertEqual(
            [c["argv"][:10] for c in calls], [["exec", "-i", "-n", "agents", "-c", "main", "pod-1", "--", "sh", "-c"]] * 2
        )
        self.assertEqual(calls[1]["argv"][11:], ["airlock-collect", f"{folder}/out.bin", "auto"])

    def test_verifies_with_python3_where_the_sandbox_has_nothing_else(self) -> None:
        StandIns.configure({"paths": {"py-box": sandbox_path(os.path.join(WORK_DIR, "py-python-only-bin"), ["python3"])}})
        try:
            exec = docker_exec("py-box")
            folder = fresh_dir("python-")
            for kind, data, compress in (("random", RANDOM, "auto"), ("text", TEXT, "always")):
                pushed = self.airlock.push_file(exec, self.seeded(data, f"{kind}.bin"), f"{folder}/{kind}.bin", compress=compress)
                self.assertEqual(pushed.transfer, "gzip" if kind == "text" else "identity")
                record = self.airlock.collect_file(exec, self.session_id, f"{folder}/{kind}.bin", compress=compress)
                self.assertEqual(record["sha256"], sha256(data))
            pushes = [c for c in self.recorded() if c["argv"][6:7] == ["airlock-push"]]
            self.assertTrue(pushes and all("hashlib.sha256" in c["argv"][5] for c in pushes))
        finally:
            StandIns.configure({})

    def test_a_collect_over_the_sessions_quota_is_the_relays_refusal_and_stores_nothing(self) -> None:
        small = self.airlock.create_session(quota_bytes=MiB)["sessionId"]
        folder = fresh_dir("quota-")
        with open(f"{folder}/big.bin", "wb") as out:
            out.write(RANDOM)
        got = refusal(lambda: self.airlock.collect_file(docker_exec("box"), small, f"{folder}/big.bin"))
        self.assertEqual((got["status"], got["code"]), (413, "quota_exceeded"))
        self.assertEqual(self.airlock.list_files(session_id=small), [])

    def test_collect_bytes_refuses_a_stream_that_changed_ran_short_or_ran_long(self) -> None:
        folder = fresh_dir("in-memory-")
        path = f"{folder}/random.bin"
        with open(path, "wb") as out:
            out.write(RANDOM)
        got_bytes = collect_bytes(docker_exec("box"), path, compress="never")
        self.assertIs(type(got_bytes), bytes)
        self.assertEqual(sha256(got_bytes), sha256(RANDOM))
        size, want = len(RANDOM), sha256(RANDOM)
        said = f"collect of {path} from docker exec %s: %s; nothing was kept"
        header = len(f"airlock-collect 2 {size} identity\n")
        flipped = bytearray(RANDOM)
        flipped[100_000 - header] ^= 1
        StandIns.configure({"flip": {"stream": "stdout", "at": 100_000}})
        try:
            got = refusal(lambda: collect_bytes(docker_exec("box"), path, compress="never"))
        finally:
            StandIns.configure({})
        read = f"but the sandbox read {size} bytes with SHA-256 {want}"
        self.assertEqual(
            (got["code"], got["message"]),
            ("transfer_mismatch", said % ("box", f"received {size} bytes with SHA-256 {sha256(bytes(flipped))}, {read}")),
        )
        # Sandboxes whose cat drops the last byte, or adds one: the hash comes from sha256sum.
        for box, cat, message in (
            ("short", 'exec head -c -1 "$@"', f"received {size - 1} bytes with SHA-256 {sha256(RANDOM[:-1])}, {read}"),
            ("long", '/bin/cat "$@"; printf x', f"more than the {size} bytes announced arrived"),
        ):
            bin = sandbox_path(os.path.join(WORK_DIR, f"py-{box}-cat-bin"), ["sha256sum", "head"])
            os.unlink(os.path.join(bin, "cat"))
            with open(os.path.join(bin, "cat"), "w") as script:
                script.write(f"#!/bin/sh\nPATH=/usr/bin:/bin\n{cat}\n")
            os.chmod(os.path.join(bin, "cat"), 0o755)
            StandIns.configure({"paths": {box: bin}})
            try:
                got = refusal(lambda: collect_bytes(docker_exec(box), path, compress="never"))
            finally:
                StandIns.configure({})
            self.assertEqual((got["code"], got["message"]), ("transfer_mismatch", said % (box, message)))
        self.assertEqual(os.listdir(folder), ["random.bin"])

    def test_falls_back_to_base64_chunks_without_stdin(self) -> None:
        folder = fresh_dir("chunks-")
        exec = docker_exec("box")
        exec.stdin = False
        data = RANDOM[:300_000]
        pushed = self.airlock.push_file(exec, self.seeded(data, "part.bin"), f"{folder}/part.bin", readonly=True)
        self.assertEqual(pushed.transfer, "base64-chunks")
        with open(f"{folder}/part.bin", "rb") as back:
            self.assertEqual(sha256(back.read()), sha256(data))
        self.assertEqual(stat.S_IMODE(os.stat(f"{folder}/part.bin").st_mode), 0o444)
        chunks = [c for c in StandIns.calls() if c["argv"][6:7] == ["airlock-chunk"]]
        self.assertEqual(len(chunks), -(-len(data) // (48 * 1024)))
        self.assertTrue(all(len(c["argv"][8]) <= 64 * 1024 for c in chunks))
        self.assertEqual(os.listdir(folder), ["part.bin"])


@needs_relay
@needs_stand_ins
class OverKubectl(RoundTrips, unittest.TestCase):
    adapter = staticmethod(_pod)


if __name__ == "__main__":
    unittest.main()
