"""Sandbox -> host over the exec channel: the sandbox prints one header line (size, encoding),
streams the bytes on stdout (gzip where it pays) while a second reader hashes them, and ends
with their SHA-256 on stderr. The host hashes what arrives; a stream that ends short, runs long
or hashes differently fails at its end, before its last chunk is handed on."""
from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import time
import zlib
from dataclasses import dataclass
from typing import IO, Generator, Iterator, Optional, Union

from ..errors import AirlockError, exec_error
from ..files import temp_near
from .core import ExecAdapter, ExecExit, exec_failure, gzip_may_pay, record_rate, widen_pipe, with_hasher
from .scripts import COLLECT_MAGIC, COLLECT_TRAILER, EXIT, collect_script

MAX_HEADER = 512
READ_BYTES = 256 * 1024
FILL_BYTES = 1024 * 1024


@dataclass
class CollectedFile:
    """A sandbox file collected to local disk."""

    path: str
    size: int
    sha256: str
    transfer: str


def check_collect_path(path: str) -> None:
    if not isinstance(path, str) or path == "" or "\0" in path:
        raise ValueError("Airlock: collect needs a sandbox path")


def collect_compression(exec: ExecAdapter, compress: str) -> str:
    if compress in ("never", "always"):
        return compress
    return "auto" if gzip_may_pay(exec, "collect") else "never"


def collect_failure(exec: ExecAdapter, path: str, exit: ExecExit) -> AirlockError:
    code = "sandbox_file_unreadable" if exit.code == EXIT.NOT_FILE else "exec_failed"
    return exec_failure(exec, f"collect of {path}", exit, code)


def collect_mismatch(exec: ExecAdapter, path: str, message: str) -> AirlockError:
    return exec_error("transfer_mismatch", f"collect of {path} from {exec.label}: {message}; nothing was kept")


def received_problem(stderr: str, size: int, got_size: int, got_sha256: str) -> Optional[str]:
    trailer = re.search(COLLECT_TRAILER + r" ([0-9a-f]{64})\b[^\n]*\s*$", stderr)
    sha256 = trailer.group(1) if trailer else "(none)"
    if got_size == size and got_sha256 == sha256:
        return None
    return (
        f"received {got_size} bytes with SHA-256 {got_sha256}, but the sandbox read {size} bytes "
        f"with SHA-256 {sha256}"
    )


class CollectedStream:
    """A file coming out of a sandbox: ``size`` as the sandbox found it, ``transfer`` how the
    bytes travel, and :meth:`chunks`, the original bytes, which raises at its end
    (``transfer_mismatch``, ``exec_failed``) unless exactly ``size`` bytes with the sandbox's
    SHA-256 came and its command succeeded; ``sha256`` is set once they did."""

    def __init__(self, exec: ExecAdapter, path: str, compress: str = "auto") -> None:
        check_collect_path(path)
        commands = with_hasher(exec)
        self._exec, self._path = exec, path
        self._started = time.monotonic()
        argv = ["sh", "-c", collect_script(commands), "airlock-collect", path, collect_compression(exec, compress)]
        self._process = exec.start(argv, None, subprocess.PIPE)
        out = self._process.stdout
        assert out is not None
        widen_pipe(out)
        self._out = out
        buffered = b""
        while b"\n" not in buffered and len(buffered) <= MAX_HEADER:
            block = out.read1(65536) if hasattr(out, "read1") else out.read(65536)  # type: ignore[attr-defined]
            if not block:
                break
            buffered += block
        header, newline, rest = buffered.partition(b"\n")
        match = re.fullmatch(COLLECT_MAGIC + r" (\d+) (identity|gzip)", header.decode("utf-8", "replace").rstrip())
        if not newline or not match:
            out.close()
            exit = self._process.wait()
            raise collect_failure(
                exec, path, ExecExit(0, "its answer did not start with the header") if exit.code == 0 else exit
            )
        self.size = int(match.group(1))
        self.transfer = match.group(2)
        self._rest = rest
        self.sha256: Optional[str] = None
        self.failure: Optional[AirlockError] = None

    def _raw(self) -> Iterator[bytes]:
        if self._rest:
            yield self._rest
        for block in iter(lambda: self._out.read(READ_BYTES), b""):
            yield block

    def _fail(self, error: AirlockError) -> AirlockError:
        self.failure = error
        return error

    def chunks(self) -> Generator[bytes, None, None]:
        raw = self._raw()
        inflate = zlib.decompressobj(47) if self.transfer == "gzip" else None
        digest = hashlib.sha256()
        received = 0
        held: Optional[bytes] = None
        try:
            for block in self._inflated(raw, inflate) if inflate is not None else raw:
                received += len(block)
                if received > self.size:
                    raise self._fail(self._mismatch(f"more than the {self.size} bytes announced arrived"))
                digest.update(block)
                if held is not None:
                    yield held
                held = block
            self._finish(received, digest)
            if held is not None:
                yield held
        finally:
            self._out.close()
            self._process.wait()

    def read_all(self) -> bytes:
        """The whole file in memory, checked as :meth:`chunks` checks it. Sent as it is, the
        bytes are read straight into one buffer of ``size`` bytes and hashed there: no chunk
        is kept, nothing is joined."""
        if self.transfer != "identity":
            return b"".join(self.chunks())
        digest = hashlib.sha256()
        whole = io.BytesIO()
        received = 0
        try:
            if len(self._rest) > self.size:
                raise self._fail(self._mismatch(f"more than the {self.size} bytes announced arrived"))
            if self.size:
                whole.seek(self.size - 1)
                whole.write(b"\0")
            with whole.getbuffer() as view:
                received = _fill(view, self._rest, self._out, digest)
            if received == self.size and self._out.read(1):
                raise self._fail(self._mismatch(f"more than the {self.size} bytes announced arrived"))
            self._finish(received, digest)
            # Without exports, CPython hands out the buffer itself rather than a copy.
            return whole.getvalue()
        finally:
            self._out.close()
            self._process.wait()

    def _finish(self, received: int, digest: "hashlib._Hash") -> None:
        """Raises unless the command succeeded and ``received`` bytes hashing to ``digest``
        are the file the sandbox read."""
        exit = self._process.wait()
        if exit.code != 0:
            raise self._fail(exec_failure(self._exec, f"collect of {self._path}", exit))
        got = digest.hexdigest()
        problem = received_problem(exit.stderr, self.size, received, got)
        if problem:
            raise self._fail(self._mismatch(problem))
        self.sha256 = got
        record_rate(self._exec, "collect", self.transfer, self.size, time.monotonic() - self._started)

    def _mismatch(self, message: str) -> AirlockError:
        return collect_mismatch(self._exec, self._path, message)

    def _inflated(self, raw: Iterator[bytes], inflate: "zlib._Decompress") -> Iterator[bytes]:
        try:
            for block in raw:
                out = inflate.decompress(block)
                if out:
                    yield out
            tail = inflate.flush()
            if tail:
                yield tail
        except zlib.error as error:
            raise self._fail(self._mismatch(f"the compressed bytes did not arrive intact ({error})")) from None


def collect_stream(exec: ExecAdapter, path: str, compress: str = "auto") -> CollectedStream:
    """Starts streaming the sandbox's file at ``path`` (see :class:`CollectedStream`)."""
    return CollectedStream(exec, path, compress)


def collect_bytes(exec: ExecAdapter, path: str, compress: str = "auto") -> bytes:
    """The sandbox's file at ``path``, checked, in memory."""
    return collect_stream(exec, path, compress).read_all()


def _fill(view: memoryview, first: bytes, source: IO[bytes], digest: "hashlib._Hash") -> int:
    """Fills ``view`` with ``first`` and then ``source``, hashing as it goes, a block at a time;
    returns how many bytes came (fewer than ``len(view)`` only when ``source`` ended)."""
    view[: len(first)] = first
    digest.update(first)
    filled, size = len(first), len(view)
    while filled < size:
        with view[filled : min(size, filled + FILL_BYTES)] as window:
            got = _read_into(source, window)
            if not got:
                break
            with window[:got] as block:
                digest.update(block)
        filled += got
    return filled


def _read_into(source: IO[bytes], window: memoryview) -> int:
    read_into = getattr(source, "readinto", None)
    if read_into is not None:
        return read_into(window) or 0
    block = source.read(len(window))
    window[: len(block)] = block
    return len(block)


def collect_to_local_file(
    exec: ExecAdapter, path: str, local_path: Union[str, "os.PathLike[str]"], compress: str = "auto"
) -> CollectedFile:
    """Collects the sandbox's file at ``path`` into ``local_path`` (replacing it): into a temp
    file beside it, checked against the size and SHA-256 the sandbox read, then renamed; nothing
    is left behind on a refusal. Sent as it is, the temp file is the CLI's stdout."""
    check_collect_path(path)
    target = os.path.abspath(local_path)
    temp = temp_near(os.path.dirname(target), os.path.basename(target))
    try:
        if collect_compression(exec, compress) == "never":
            size, sha256, transfer = _collect_raw(exec, path, temp)
        else:
            collected = collect_stream(exec, path, compress)
            with open(temp, "xb") as out:
                for chunk in collected.chunks():
                    out.write(chunk)
            assert collected.sha256 is not None
            size, sha256, transfer = collected.size, collected.sha256, collected.transfer
        os.replace(temp, target)
        return CollectedFile(target, size, sha256, transfer)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


def _collect_raw(exec: ExecAdapter, path: str, temp: str) -> "tuple[int, str, str]":
    """The sandbox's stdout goes straight into ``temp``; the header and the hash on stderr."""
    commands = with_hasher(exec)
    argv = ["sh", "-c", collect_script(commands), "airlock-collect", path, "never", "raw"]
    started = time.monotonic()
    with open(temp, "xb+") as handle:
        exit = exec.start(argv, None, handle).wait()
        if exit.code != 0:
            raise collect_failure(exec, path, exit)
        handle.seek(0)
        digest = hashlib.sha256()
        got_size = 0
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(block)
            got_size += len(block)
    header = re.search("^" + COLLECT_MAGIC + r" (\d+) identity$", exit.stderr, re.MULTILINE)
    if not header:
        raise collect_failure(exec, path, ExecExit(0, "its stderr did not hold the header"))
    size = int(header.group(1))
    problem = received_problem(exit.stderr, size, got_size, digest.hexdigest())
    if problem:
        raise collect_mismatch(exec, path, problem)
    record_rate(exec, "collect", "identity", size, time.monotonic() - started)
    return size, digest.hexdigest(), "identity"
