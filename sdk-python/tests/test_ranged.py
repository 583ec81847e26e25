"""Downloads in parallel byte ranges (airlock_sdk.ranged) against wrangler dev, as
test/sdk/ranged-download.test.ts holds the TypeScript SDK to: a file over the threshold (lowered
by the shim's variables, which the SDK reads too) comes in six ranges of 1 MiB, bytes equal by
SHA-256; a range whose bytes are altered on the way fails the whole download as
``download_mismatch``, keeping nothing."""
from __future__ import annotations

import os
import secrets
import unittest
from typing import Any, Dict, Iterator, List, Optional, Tuple

from airlock_sdk import AirlockSession
from airlock_sdk._http import Response

from support import MiB, fresh_dir, needs_relay, operator, refusal, sha256

KNOBS = {"AIRLOCK_PARALLEL_THRESHOLD": str(MiB), "AIRLOCK_DOWNLOAD_CHUNK": str(MiB), "AIRLOCK_DOWNLOAD_STREAMS": "4"}
SIZE = 6 * MiB


class _Flipped:
    """A ranged answer with one byte of its body flipped (a path handing out wrong bytes)."""

    def __init__(self, response: Response) -> None:
        self._response = response
        self.status = response.status
        self.headers = response.headers

    def iter_chunks(self) -> Iterator[bytes]:
        flipped = False
        for chunk in self._response.iter_chunks():
            if not flipped and len(chunk) > 100:
                chunk = chunk[:100] + bytes([chunk[100] ^ 0xFF]) + chunk[101:]
                flipped = True
            yield chunk

    def close(self) -> None:
        self._response.close()

    def abort(self) -> None:
        self._response.abort()


class _Watched(AirlockSession):
    """A session that notes each range asked for, and can flip a byte of one range's answer."""

    def __init__(self, url: str, token: str, corrupt: Optional[str] = None) -> None:
        super().__init__(url, token)
        self.ranges: List[str] = []
        self._corrupt = corrupt

    def download(self, file_id: str, range: Optional[Tuple[int, Optional[int]]] = None) -> Any:
        response = super().download(file_id, range)
        if range is None:
            return response
        asked = f"bytes={range[0]}-{range[1]}"
        self.ranges.append(asked)
        return _Flipped(response) if asked == self._corrupt else response


@needs_relay
class RangedDownloads(unittest.TestCase):
    saved: Dict[str, Optional[str]] = {}

    @classmethod
    def setUpClass(cls) -> None:
        airlock = operator()
        grant = airlock.create_session(quota_bytes=64 * MiB)
        cls.token = grant["token"]
        cls.data = secrets.token_bytes(SIZE)
        cls.file_id = airlock.seed_inbox(grant["sessionId"], cls.data, name="big.bin")["file"]["fileId"]
        for name, value in KNOBS.items():
            cls.saved[name] = os.environ.get(name)
            os.environ[name] = value

    @classmethod
    def tearDownClass(cls) -> None:
        for name, value in cls.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def test_gets_the_bytes_exactly_in_six_ranges_of_1_mib(self) -> None:
        session = _Watched(operator().url, self.token)
        folder = fresh_dir("ranged-")
        record = session.download_to_file(self.file_id, os.path.join(folder, "big.bin"))
        with open(os.path.join(folder, "big.bin"), "rb") as back:
            self.assertEqual(sha256(back.read()), sha256(self.data))
        self.assertEqual(record["size"], SIZE)
        self.assertEqual(sorted(session.ranges), sorted(f"bytes={i * MiB}-{(i + 1) * MiB - 1}" for i in range(6)))
        self.assertEqual(os.listdir(folder), ["big.bin"])

    def test_a_download_one_of_whose_ranges_was_altered_keeps_nothing(self) -> None:
        session = _Watched(operator().url, self.token, corrupt=f"bytes={2 * MiB}-{3 * MiB - 1}")
        folder = fresh_dir("ranged-corrupt-")
        got = refusal(lambda: session.download_to_dir(self.file_id, folder))
        self.assertEqual((got["status"], got["code"]), (0, "download_mismatch"))
        self.assertIn(f"but file {self.file_id} is {SIZE} bytes with SHA-256 {sha256(self.data)}", got["message"])
        self.assertEqual(os.listdir(folder), [])
        self.assertIn(f"bytes={2 * MiB}-{3 * MiB - 1}", session.ranges)


if __name__ == "__main__":
    unittest.main()
