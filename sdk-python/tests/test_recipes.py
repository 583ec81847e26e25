"""The recipes in docs/hosts, run as written against wrangler dev, the fake Telegram server and
a remote sandbox reached over a real sshd (its disk is this machine's)."""
from __future__ import annotations

import os
import secrets
import shutil
import time
import unittest
from typing import Any, Dict, List

from airlock_deepagents import ExecTransportFiles, HttpsFiles
from airlock_sdk.exec import docker_exec
from airlock_sdk.exec.core import run_small
from hermes_gateway import AirlockGateway

from support import (
    MiB, RELAY_URL, SHIM, TELEGRAM, StandIns, fresh_dir, needs_relay, needs_sshd, needs_stand_ins, needs_telegram,
    operator, sha256, ssh_adapter, telegram_add_file, telegram_requests,
)

NODE = shutil.which("node") or "node"


def shim_in_sandbox(session: Dict[str, Any], *args: str) -> Any:
    """Runs the shim in the remote sandbox (over ssh) as the agent would."""
    env = ["env", f"AIRLOCK_URL={RELAY_URL}", f"AIRLOCK_TOKEN={session['token']}"]
    return run_small(ssh_adapter(), [*env, NODE, SHIM, *args])


@needs_relay
@needs_telegram
@needs_sshd
@needs_stand_ins
class HermesGateway(unittest.TestCase):
    def setUp(self) -> None:
        self.gateway = AirlockGateway(operator(), TELEGRAM["token"], api_root=TELEGRAM["apiRoot"])
        self.chat = str(100_000_000 + secrets.randbelow(800_000_000))
        StandIns.configure({})

    def sent_to_chat(self, method: str) -> List[Dict[str, Any]]:
        return [r for r in telegram_requests(method) if r["fields"].get("chat_id") == self.chat]

    def test_inbound_a_persons_attachment_reaches_the_remote_sandbox(self) -> None:
        data = b"city,count\n" + b"".join(b"town-%d,%d\n" % (i, i) for i in range(20_000))
        ref = telegram_add_file("dataset.csv", data, "text/csv")
        update = {
            "update_id": 1,
            "message": {
                "message_id": 1, "date": int(time.time()),
                "chat": {"id": int(self.chat), "type": "private", "first_name": "Tester"},
                "document": {
                    "file_id": ref["file_id"], "file_unique_id": ref["file_unique_id"],
                    "file_name": "dataset.csv", "mime_type": "text/csv", "file_size": len(data),
                },
            },
        }
        line = self.gateway.on_update(update)
        self.assertEqual(line, f"[User sent dataset.csv ({len(data)} bytes): run `airlock pull` to get it]")
        sandbox = fresh_dir("hermes-sandbox-")
        pulled = shim_in_sandbox(self.gateway.session_for(self.chat), "pull", "--dir", f"{sandbox}/uploads")
        self.assertEqual(pulled.code, 0, pulled.stderr)
        self.assertIn(f"at {sandbox}/uploads/dataset.csv]", pulled.stdout)
        with open(f"{sandbox}/uploads/dataset.csv", "rb") as back:
            self.assertEqual(sha256(back.read()), sha256(data))
        self.assertIsNone(self.gateway.on_update({"update_id": 2, "message": {"text": "hi", "chat": {"id": 1}}}))

    def test_outbound_the_agents_send_is_posted_with_the_gateways_bot(self) -> None:
        sandbox = fresh_dir("hermes-out-")
        data = b"\0" + secrets.token_bytes(40_000)
        with open(f"{sandbox}/report.bin", "wb") as out:
            out.write(data)
        session = self.gateway.session_for(self.chat)
        sent = shim_in_sandbox(session, "send", f"{sandbox}/report.bin", "--to", f"telegram:{self.chat}", "--json")
        self.assertEqual(sent.code, 0, sent.stderr)
        (document,) = self.sent_to_chat("sendDocument")
        self.assertEqual(document["files"][0]["sha256"], sha256(data))
        self.assertTrue(document["authorization"]["valid"])  # the gateway's own bot token
        # Posting only: nothing that would take the updates from the gateway's polling or webhook.
        for method in ("getUpdates", "setWebhook", "deleteWebhook", "close", "logOut"):
            self.assertEqual(telegram_requests(method), [], method)

    def test_a_media_line_is_delivered_through_the_exec_channel(self) -> None:
        sandbox = fresh_dir("hermes-media-")
        data = b"\0" + secrets.token_bytes(3 * MiB)
        with open(f"{sandbox}/chart.bin", "wb") as out:
            out.write(data)
        delivery = self.gateway.deliver_media(docker_exec("box"), self.chat, f"{sandbox}/chart.bin", caption="chart")
        self.assertEqual((delivery["mode"], delivery["status"]), ("native", "delivered"))
        (document,) = self.sent_to_chat("sendDocument")
        self.assertEqual((document["files"][0]["sha256"], document["fields"]["caption"]), (sha256(data), "chart"))


class DeepagentsCases:
    """Mixed into one TestCase per transport; ``files(root)`` makes the adapter."""

    def files(self, root: str) -> Any:
        raise NotImplementedError

    def test_upload_then_download_with_per_file_results(self) -> None:
        root = fresh_dir("deepagents-root-")
        adapter = self.files(root)
        empty, binary, large = b"", secrets.token_bytes(MiB), secrets.token_bytes(20 * MiB)
        outside = os.path.join(os.path.dirname(root), f"escape-{secrets.token_hex(3)}.txt")
        uploads = [
            (f"{root}/empty.txt", empty),
            (f"{root}/deep/er/binary.dat", binary),
            (f"{root}/large.bin", large),
            (f"{root}/../{os.path.basename(outside)}", b"never"),
            ("relative.txt", b"never"),
        ]
        results = adapter.upload_files(uploads)
        self.assertEqual([(r.path, r.error) for r in results], [
            (uploads[0][0], None), (uploads[1][0], None), (uploads[2][0], None),
            (uploads[3][0], "invalid_path"), ("relative.txt", "invalid_path"),
        ])
        self.assertFalse(os.path.exists(outside))
        for path, content in uploads[:3]:
            with open(path, "rb") as back:
                self.assertEqual(sha256(back.read()), sha256(content))

        replaced = adapter.upload_files([(f"{root}/empty.txt", b"now something\n")])
        self.assertEqual([r.error for r in replaced], [None])

        asked = [f"{root}/large.bin", f"{root}/missing.txt", "/etc/hostname", f"{root}/deep", f"{root}/deep/er/binary.dat", f"{root}/empty.txt"]
        got = adapter.download_files(asked)
        self.assertEqual([r.path for r in got], asked)
        self.assertEqual([r.error for r in got], [None, "file_not_found", "invalid_path", "is_directory", None, None])
        self.assertEqual(sha256(got[0].content), sha256(large))
        self.assertEqual(got[4].content, binary)
        self.assertEqual(got[5].content, b"now something\n")
        self.assertTrue(all(r.content is None for r in got[1:4]))
        self.assertEqual(sorted(n for n in os.listdir(root)), ["deep", "empty.txt", "large.bin"])

    def test_an_empty_file_round_trips(self) -> None:
        root = fresh_dir("deepagents-empty-")
        adapter = self.files(root)
        self.assertEqual([r.error for r in adapter.upload_files([(f"{root}/zero", b"")])], [None])
        (got,) = adapter.download_files([f"{root}/zero"])
        self.assertEqual((got.content, got.error), (b"", None))


@needs_relay
@needs_sshd
class DeepagentsOverExec(DeepagentsCases, unittest.TestCase):
    def files(self, root: str) -> Any:
        return ExecTransportFiles(ssh_adapter(), root=root)


@needs_relay
@needs_sshd
class DeepagentsOverHttps(DeepagentsCases, unittest.TestCase):
    def files(self, root: str) -> Any:
        airlock = operator()
        session = airlock.create_session(quota_bytes=200 * MiB)
        env = {"AIRLOCK_URL": RELAY_URL, "AIRLOCK_TOKEN": session["token"]}
        return HttpsFiles(ssh_adapter(), airlock, session, root=root, shim=[NODE, SHIM], sandbox_env=env)


if __name__ == "__main__":
    unittest.main()
