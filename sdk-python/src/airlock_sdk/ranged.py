"""A large file downloaded in parallel byte ranges into an open temp file, as the TypeScript
SDK's Node entry does (``sdk/src/node-ranged.ts``): ranges sized as the shim's, several at once
on threads (socket reads, file writes and hashlib let go of the GIL), each a
``download(file_id, range=...)`` (on ``s3`` a redirect to a presigned GET of that range, on
``r2`` served by the relay) written at its place, the SHA-256 computed in order as they land
(bytes landing ahead are read back once the hash reaches them: memory stays flat). Settings come
from the shim's variables: ``AIRLOCK_DOWNLOAD_STREAMS`` (1 turns ranges off),
``AIRLOCK_PARALLEL_THRESHOLD`` and ``AIRLOCK_DOWNLOAD_CHUNK`` (bytes)."""
from __future__ import annotations

import hashlib
import http.client
import os
import threading
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Protocol, Set, Tuple

from ._http import Response
from .errors import AirlockError

MiB = 1024 * 1024
#: Attempts per range: a range cut off mid-way asks again for the bytes it is missing.
ATTEMPTS = 3
_READ_BACK = MiB


class RangeReader(Protocol):
    def download(self, file_id: str, range: Optional[Tuple[int, Optional[int]]] = None) -> Response: ...


@dataclass(frozen=True)
class RangeSettings:
    """How a large download is split: streams at once, the size from which it splits, and bytes
    per range (None: :func:`default_chunk` of the file's size)."""

    streams: int
    threshold: int
    chunk: Optional[int]


def range_settings(env: Mapping[str, str] = os.environ) -> RangeSettings:
    """The shim's defaults (4 streams, from 16 MiB, ranges by :func:`default_chunk`), or the
    environment's; a value that is not a whole number large enough is a ``TypeError``."""

    def read(name: str, fallback: int, least: int) -> int:
        raw = env.get(name, "").strip()
        try:
            value = int(raw) if raw else fallback
        except ValueError:
            value = least - 1
        if value < least:
            raise TypeError(f"Airlock: {name} must be an integer of at least {least}")
        return value

    chunk = read("AIRLOCK_DOWNLOAD_CHUNK", 0, 64 * 1024) if env.get("AIRLOCK_DOWNLOAD_CHUNK", "").strip() else None
    return RangeSettings(
        streams=min(read("AIRLOCK_DOWNLOAD_STREAMS", 4, 1), 16),
        threshold=read("AIRLOCK_PARALLEL_THRESHOLD", 16 * MiB, 1),
        chunk=chunk,
    )


def default_chunk(size: int, streams: int) -> int:
    """Two ranges per stream, from 4 to 32 MiB (each range costs a request)."""
    return min(32 * MiB, max(4 * MiB, -(-size // (2 * streams))))


class WholeOnly(Exception):
    """The relay answered a range with the whole file (an untabled gzip file far in)."""


def maybe_ranges(files: RangeReader, record: Dict[str, Any], fd: int) -> Optional[str]:
    """``record``'s SHA-256 as downloaded in ranges into ``fd`` (open for reading and writing)
    when it is large enough; None when it is not, or the relay serves it only whole (``fd`` is
    then emptied for one stream)."""
    settings = range_settings()
    if settings.streams < 2 or record["size"] < settings.threshold:
        return None
    try:
        return _Ranges(files, record, fd, settings).run()
    except WholeOnly:
        os.ftruncate(fd, 0)
        return None


class _Piece:
    __slots__ = ("start", "end", "got")

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end, self.got = start, end, 0


class _Ranges:
    def __init__(self, files: RangeReader, record: Dict[str, Any], fd: int, settings: RangeSettings) -> None:
        self.files, self.fd = files, fd
        self.file_id: str = record["fileId"]
        self.size: int = record["size"]
        self.streams = settings.streams
        chunk = settings.chunk or default_chunk(self.size, settings.streams)
        self.pieces = [_Piece(at, min(at + chunk, self.size)) for at in range(0, self.size, chunk)]
        self.next = 0
        self.cond = threading.Condition()
        self.stopped = threading.Event()
        self.failure: Optional[BaseException] = None
        self.active: Set[Response] = set()
        self.hash = hashlib.sha256()
        self.at = 0  # bytes hashed so far: the file's first ``at``

    def run(self) -> str:
        threads = [threading.Thread(target=self._stream, daemon=True) for _ in range(min(self.streams, len(self.pieces)))]
        for thread in threads:
            thread.start()
        try:
            digest = self._digest()
        except BaseException as error:
            self._fail(error)
            digest = None
        for thread in threads:
            thread.join()
        if self.failure is not None:
            raise self.failure
        assert digest is not None
        return digest

    def _fail(self, error: BaseException) -> None:
        with self.cond:
            if self.failure is None:
                self.failure = error
            self.stopped.set()
            answers = list(self.active)
            self.cond.notify_all()
        for response in answers:
            response.abort()

    def _stream(self) -> None:
        try:
            while not self.stopped.is_set():
                with self.cond:
                    if self.next >= len(self.pieces):
                        return
                    piece = self.pieces[self.next]
                    self.next += 1
                self._fetch(piece)
        except BaseException as error:
            self._fail(error)

    def _fetch(self, piece: _Piece) -> None:
        tries = 0
        while not self.stopped.is_set():
            tries += 1
            first, last = piece.start + piece.got, piece.end - 1
            response = self.files.download(self.file_id, range=(first, last))
            with self.cond:
                self.active.add(response)
            try:
                if self.stopped.is_set():
                    return
                if response.status != 206:
                    raise WholeOnly(f"the relay answered bytes {first}-{last} with {response.status}")
                if response.headers.get("content-range") != f"bytes {first}-{last}/{self.size}":
                    raise self._refused(response, f"the relay answered bytes {first}-{last} with another range")
                try:
                    for chunk in response.iter_chunks():
                        if piece.got + len(chunk) > piece.end - piece.start:
                            raise self._refused(response, "the relay sent more bytes than the range asked for")
                        _write_at(self.fd, chunk, piece.start + piece.got)
                        self._landed(piece, chunk)
                except (OSError, http.client.HTTPException) as error:
                    if self.stopped.is_set():
                        return
                    if tries >= ATTEMPTS:
                        raise AirlockError(0, "network_error", f"GET {self.file_id} bytes {first}-{last}: {error}") from error
                    continue
                if piece.start + piece.got == piece.end:
                    return
            finally:
                with self.cond:
                    self.active.discard(response)
                response.close()
            if tries >= ATTEMPTS:
                raise AirlockError(0, "network_error", f"GET {self.file_id}: a range of the download kept ending early")

    def _refused(self, response: Response, message: str) -> AirlockError:
        return AirlockError(response.status, "invalid_response", f"GET {self.file_id}: {message}")

    def _landed(self, piece: _Piece, chunk: bytes) -> None:
        """Bytes just written where ``piece`` had reached: hashed now when the hash is there."""
        with self.cond:
            if piece.start + piece.got == self.at:
                self.hash.update(chunk)
                self.at += len(chunk)
            piece.got += len(chunk)
            self.cond.notify_all()

    def _digest(self) -> Optional[str]:
        """The whole file's SHA-256 in order, waiting for bytes not yet there; None once a
        stream failed."""
        for piece in self.pieces:
            while True:
                with self.cond:
                    while not self.stopped.is_set() and self.at < piece.end and self.at >= piece.start + piece.got:
                        self.cond.wait(1.0)
                    if self.stopped.is_set():
                        return None
                    if self.at >= piece.end:
                        break
                    start = self.at
                    want = min(piece.start + piece.got - start, _READ_BACK)
                # No stream hashes at ``start`` meanwhile: every byte up to start + want is there.
                data = os.pread(self.fd, want, start)
                if not data:
                    raise OSError(f"the temp file ended at {start}, before {start + want}")
                with self.cond:
                    self.hash.update(data)
                    self.at = start + len(data)
        return self.hash.hexdigest()


def _write_at(fd: int, data: bytes, at: int) -> None:
    view = memoryview(data)
    while len(view):
        written = os.pwrite(fd, view, at)
        view = view[written:]
        at += written

