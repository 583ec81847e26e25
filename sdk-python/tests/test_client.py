"""The client against wrangler dev: sessions, seeds, listings, checked downloads, share links,
deliveries to the fake Telegram server, upload links, errors; retries and redirects against
small local servers that script the faults."""
from __future__ import annotations

import io
import json
import os
import secrets
import threading
import time
import unittest
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Tuple

from airlock_sdk import AirlockClient, AirlockError, AirlockSession
from airlock_sdk.files import download_to_dir

from support import MiB, fresh_dir, needs_relay, needs_telegram, operator, refusal, sha256, telegram_requests


@needs_relay
class Sessions(unittest.TestCase):
    def test_mints_with_destinations_owner_quota_and_ttl_then_revokes(self) -> None:
        airlock = operator()
        grant = airlock.create_session(
            destinations=["telegram:777001"], quota_bytes=5 * MiB, ttl_seconds=600, owner="user-42"
        )
        self.assertEqual(grant["destinations"], ["telegram:777001"])
        self.assertEqual(grant["quotaBytes"], 5 * MiB)
        self.assertEqual(grant["owner"], "user-42")
        expires = time.mktime(time.strptime(grant["expiresAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        self.assertAlmostEqual(expires - time.time(), 600, delta=60)
        session = airlock.as_session(grant["token"])
        self.assertEqual(session.inbox(), [])
        revoked = airlock.revoke_session(grant["sessionId"])
        self.assertEqual(revoked["sessionId"], grant["sessionId"])
        got = refusal(session.inbox)
        self.assertEqual((got["status"], got["code"]), (401, "session_revoked"))

    def test_operator_calls_need_the_admin_token_and_tokens_never_show(self) -> None:
        client = AirlockClient(operator().url, token="tok_secret")
        with self.assertRaises(TypeError):
            client.create_session()
        self.assertNotIn("tok_secret", repr(client))
        self.assertNotIn("tok_secret", repr(client.as_session()))
        wrong = AirlockClient(operator().url, admin_token="not-the-admin-token")
        got = refusal(wrong.create_session)
        self.assertEqual(got["status"], 401)
        self.assertTrue(got["code"] and got["message"])

    def test_a_seed_refused_before_its_body_is_read_is_the_relays_answer(self) -> None:
        got = refusal(lambda: operator().seed_inbox("ses_nope", bytes(8 * MiB), name="x.bin"))
        self.assertEqual((got["status"], got["code"]), (404, "session_not_found"))

    def test_a_file_nobody_has_is_404_file_not_found(self) -> None:
        got = refusal(lambda: operator().get_file("fil_nope"))
        self.assertEqual((got["status"], got["code"]), (404, "file_not_found"))


@needs_relay
class SeedsAndDownloads(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.airlock = operator()
        cls.grant = cls.airlock.create_session(quota_bytes=64 * MiB)
        cls.session = cls.airlock.as_session(cls.grant["token"])

    def test_seeds_bytes_a_path_a_file_object_and_a_stream_into_the_inbox(self) -> None:
        sid = self.grant["sessionId"]
        data = secrets.token_bytes(3 * MiB + 17)
        folder = fresh_dir("seed-")
        path = os.path.join(folder, "from-disk.bin")
        with open(path, "wb") as out:
            out.write(data)
        chunks = (data[i : i + 65536] for i in range(0, len(data), 65536))
        seeded = [
            self.airlock.seed_inbox(sid, b"a,b\n1,2\n", name="data.csv", content_type="text/csv"),
            self.airlock.seed_inbox(sid, path),
            self.airlock.seed_inbox(sid, io.BytesIO(data), name="object.bin", size=len(data)),
            self.airlock.seed_inbox(sid, chunks, name="stream.bin", size=len(data)),
        ]
        names = [item["file"]["name"] for item in seeded]
        self.assertEqual(names, ["data.csv", "from-disk.bin", "object.bin", "stream.bin"])
        self.assertEqual([item["file"]["sha256"] for item in seeded[1:]], [sha256(data)] * 3)
        inbox = {item["itemId"]: item for item in self.session.inbox()}
        for item in seeded:
            self.assertIn(item["itemId"], inbox)
        self.assertEqual(self.session.ack(seeded[0]["itemId"])["itemId"], seeded[0]["itemId"])
        self.assertNotIn(seeded[0]["itemId"], [item["itemId"] for item in self.session.inbox()])

        listed = {f["fileId"] for f in self.airlock.list_files(session_id=sid)}
        self.assertTrue({item["file"]["fileId"] for item in seeded} <= listed)
        self.assertEqual(listed, {f["fileId"] for f in self.session.list_files()})

        target = os.path.join(folder, "back.bin")
        record = self.airlock.download_to_file(seeded[3]["file"]["fileId"], target)
        with open(target, "rb") as back:
            self.assertEqual(sha256(back.read()), sha256(data))
        self.assertEqual(record["size"], len(data))
        self.assertEqual(sorted(os.listdir(folder)), ["back.bin", "from-disk.bin"])

    def test_download_to_dir_cleans_the_name_and_never_replaces_a_file(self) -> None:
        sid = self.grant["sessionId"]
        hostile = "..\\..\\etc\u202e/\u200breport.txt"
        item = self.airlock.seed_inbox(sid, b"report\n", name=hostile)
        folder = fresh_dir("to-dir-")
        first = self.session.download_to_dir(item["file"]["fileId"], folder)
        second = self.airlock.download_to_dir(item["file"]["fileId"], folder)
        self.assertEqual(os.path.dirname(first["path"]), folder)
        self.assertEqual(os.path.basename(second["path"]), os.path.basename(first["path"]).replace(".txt", " (1).txt"))
        self.assertEqual(sorted(os.listdir(folder)), sorted([os.path.basename(first["path"]), os.path.basename(second["path"])]))
        with self.assertRaises(ValueError):
            self.airlock.download_to_file(item["file"]["fileId"], os.path.join(folder, "a\nb.txt"))

    def test_a_download_that_does_not_match_its_record_keeps_nothing(self) -> None:
        item = self.airlock.seed_inbox(self.grant["sessionId"], b"the real bytes\n", name="real.txt")
        airlock = self.airlock

        class Lying:
            def get_file(self, file_id: str) -> Dict[str, Any]:
                return {**airlock.get_file(file_id), "sha256": "0" * 64}

            def download(self, file_id: str) -> Any:
                return airlock.download(file_id)

        folder = fresh_dir("mismatch-")
        got = refusal(lambda: download_to_dir(Lying(), item["file"]["fileId"], folder))
        self.assertEqual(got["code"], "download_mismatch")
        self.assertEqual(
            got["message"],
            f"downloaded 15 bytes with SHA-256 {sha256(b'the real bytes' + bytes([10]))}, but file "
            f"{item['file']['fileId']} is 15 bytes with SHA-256 {'0' * 64}; nothing was kept",
        )
        self.assertEqual(os.listdir(folder), [])

    def test_share_links_serve_the_bytes(self) -> None:
        data = secrets.token_bytes(200_000)
        item = self.airlock.seed_inbox(self.grant["sessionId"], data, name="shared.bin")
        link = self.session.create_share_link(item["file"]["fileId"], ttl_seconds=300, max_downloads=2)
        self.assertEqual(link["maxDownloads"], 2)
        with urllib.request.urlopen(urllib.request.Request(link["url"], headers={"user-agent": "curl/8"})) as answer:
            self.assertEqual(sha256(answer.read()), sha256(data))
        with self.airlock.download(item["file"]["fileId"], range=(10, 19)) as part:
            self.assertEqual((part.status, part.read()), (206, data[10:20]))

    def test_upload_links_take_a_persons_file_into_the_inbox(self) -> None:
        # A size as airlock request --max-bytes takes it: "1M" is 1 MiB (the one unit rule).
        link = self.session.create_upload_link(name="scan.pdf", max_bytes="1M", ttl_seconds=600)
        self.assertEqual(link["maxBytes"], MiB)
        self.assertEqual(self.session.upload_link(link["requestId"])["status"], "open")
        data = b"%PDF-1.4\n" + secrets.token_bytes(50_000)
        put = urllib.request.Request(link["url"], data=data, method="PUT")
        with urllib.request.urlopen(put) as answer:
            self.assertEqual(json.load(answer)["sha256"], sha256(data))
        state = self.session.upload_link(link["requestId"])
        for _ in range(50):
            if state["status"] == "received":
                break
            time.sleep(0.2)
            state = self.session.upload_link(link["requestId"])
        self.assertEqual(state["status"], "received")
        self.assertEqual(self.session.get_file(state["fileId"])["sha256"], sha256(data))


@needs_relay
@needs_telegram
class Deliveries(unittest.TestCase):
    def test_delivers_to_a_bound_chat_and_refuses_another(self) -> None:
        airlock = operator()
        chat = str(100_000_000 + secrets.randbelow(800_000_000))
        grant = airlock.create_session(destinations=[f"telegram:{chat}"])
        session = airlock.as_session(grant["token"])
        data = b"\0" + secrets.token_bytes(30_000)
        file_id = airlock.seed_inbox(grant["sessionId"], data, name="notes.bin")["file"]["fileId"]
        delivery = session.deliver(file_id, to=f"telegram:{chat}", caption="for you", idempotency_key="k1")
        self.assertEqual((delivery["mode"], delivery["status"]), ("native", "delivered"))
        again = session.deliver(file_id, to=f"telegram:{chat}", caption="for you", idempotency_key="k1")
        self.assertEqual(again["deliveryId"], delivery["deliveryId"])
        sent = [r for r in telegram_requests("sendDocument") if r["fields"].get("chat_id") == chat]
        self.assertEqual(len(sent), 1)
        self.assertEqual(sent[0]["files"][0]["sha256"], sha256(data))
        self.assertEqual([d["deliveryId"] for d in airlock.list_deliveries(file_id)], [delivery["deliveryId"]])
        got = refusal(lambda: session.deliver(file_id, to="telegram:1"))
        self.assertEqual((got["status"], got["code"]), (403, "destination_not_allowed"))


class _Scripted(BaseHTTPRequestHandler):
    """Answers from a script of (status, headers, body); records what it was sent."""

    script: List[Tuple[int, Dict[str, str], bytes]] = []
    seen: List[Tuple[str, str, Dict[str, str]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        type(self).seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        status, headers, body = type(self).script.pop(0) if type(self).script else (500, {}, b"")
        self.send_response(status)
        for name, value in {**headers, "content-length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


def _serve(script: List[Tuple[int, Dict[str, str], bytes]]) -> Tuple[ThreadingHTTPServer, type]:
    handler = type("Handler", (_Scripted,), {"script": list(script), "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler


def _stop(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


def _url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


BUSY = json.dumps({"error": {"code": "busy", "message": "try again"}}).encode()
RECORD = json.dumps({"fileId": "fil_1", "name": "a.txt"}).encode()


class RetriesAndRedirects(unittest.TestCase):
    def test_a_get_is_retried_after_503_honouring_retry_after(self) -> None:
        server, handler = _serve([(503, {"retry-after": "1"}, BUSY), (429, {"retry-after": "0"}, BUSY), (200, {}, RECORD)])
        try:
            started = time.monotonic()
            record = AirlockSession(_url(server), "tok").get_file("fil_1")
            self.assertGreaterEqual(time.monotonic() - started, 1.0)
            self.assertEqual(record["fileId"], "fil_1")
            self.assertEqual(len(handler.seen), 3)
        finally:
            _stop(server)

    def test_gives_up_after_the_retries_with_the_relays_error(self) -> None:
        server, handler = _serve([(503, {"retry-after": "0"}, BUSY)] * 3)
        try:
            got = refusal(lambda: AirlockSession(_url(server), "tok", retries=1).get_file("fil_1"))
            self.assertEqual(got, {"status": 503, "code": "busy", "message": "try again"})
            self.assertEqual(len(handler.seen), 2)
        finally:
            _stop(server)

    def test_a_request_that_changes_anything_is_never_retried(self) -> None:
        server, handler = _serve([(503, {"retry-after": "0"}, BUSY), (200, {}, RECORD)])
        try:
            got = refusal(lambda: AirlockClient(_url(server), admin_token="adm").create_session())
            self.assertEqual(got, {"status": 503, "code": "busy", "message": "try again"})
            self.assertEqual(len(handler.seen), 1)
        finally:
            _stop(server)

    def test_an_unreachable_relay_is_network_error(self) -> None:
        server, _ = _serve([])
        url = _url(server)
        server.shutdown()
        server.server_close()
        got = refusal(lambda: AirlockSession(url, "tok", retries=0).get_file("fil_1"))
        self.assertEqual((got["status"], got["code"]), (0, "network_error"))
        self.assertTrue(got["message"].startswith("GET /v1/files/fil_1: request failed: "))

    def test_a_redirect_to_the_store_carries_the_range_but_never_the_bearer(self) -> None:
        store, store_handler = _serve([(206, {"etag": '"store"'}, b"bytes")])
        relay, _ = _serve([(307, {"location": f"{_url(store)}/object?sig=1", "etag": '"relay-sha"'}, b"")])
        try:
            with AirlockSession(_url(relay), "tok_secret").download("fil_1", range=(0, 4)) as answer:
                self.assertEqual((answer.status, answer.read()), (206, b"bytes"))
                self.assertEqual(answer.headers["etag"], '"relay-sha"')
            (_, path, headers), = store_handler.seen
            self.assertEqual(path, "/object?sig=1")
            self.assertNotIn("authorization", headers)
            self.assertEqual(headers["range"], "bytes=0-4")
        finally:
            _stop(store)
            _stop(relay)


if __name__ == "__main__":
    unittest.main()
