"""Host -> sandbox over the exec channel: the bytes stream through the command's stdin (gzip
where it pays and the sandbox can inflate), land in a temp file beside the target, are checked
by SHA-256 inside the sandbox, and only then renamed into place."""
from __future__ import annotations

import hashlib
import itertools
import os
import re
import secrets
import subprocess
import threading
import time
import zlib
from typing import IO, Iterable, Iterator, List, Optional, Union

from .core import ExecAdapter, ExecExit, gzip_may_pay, record_rate, run_small, with_hasher
from .push_base64 import MAX_BASE64_BYTES, push_chunked, refuse_too_large_for_base64
from .push_contract import PushResult, push_failure
from .scripts import SandboxCommands, push_script

SAMPLE_BYTES = 64 * 1024
READ_BYTES = 1024 * 1024


def check_push(path: str, sha256: str, size: int) -> str:
    """Checks a push's arguments; returns its SHA-256 in lowercase."""
    if not isinstance(path, str) or path == "" or "\0" in path or re.search(r"(^|/)\.{0,2}$", path):
        raise ValueError(f"Airlock: the sandbox path must name a file: {path!r}")
    digest = (sha256 or "").lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError("Airlock: a push needs the bytes' sha256 (64 hex digits)")
    if not isinstance(size, int) or size < 0:
        raise ValueError("Airlock: a push needs the bytes' exact size")
    return digest


def push_stream(
    exec: ExecAdapter,
    chunks: Iterable[bytes],
    path: str,
    *,
    sha256: str,
    size: int,
    readonly: bool = False,
    overwrite: bool = False,
    compress: str = "auto",
    max_base64_bytes: int = MAX_BASE64_BYTES,
) -> PushResult:
    """Streams ``chunks`` (exactly ``size`` bytes hashing to ``sha256``) into the sandbox at
    ``path``. Never over an existing file unless ``overwrite``; ``readonly`` leaves it 0444.
    Refusals (``AirlockError``, status 0): ``target_exists``, ``transfer_mismatch``,
    ``sandbox_cannot_verify``, ``sandbox_cannot_write``, ``exec_failed``, ``exec_unavailable``;
    without stdin also ``too_large_for_base64`` and ``sandbox_cannot_decode``. Nothing is left
    at ``path`` after a refusal; the source is closed."""
    try:
        trailed = isinstance(chunks, _Trailed)
        digest = _TRAILED if trailed else check_push(path, sha256, size)
        if not exec.stdin:
            refuse_too_large_for_base64(exec, path, size, max_base64_bytes)
        commands = with_hasher(exec)
        mode = "0444" if readonly else ""
        replace = "1" if overwrite else "0"
        if not exec.stdin:
            return push_chunked(exec, commands, chunks, path, digest, mode, replace, size)
        stream, gzip = _maybe_gzip(iter(chunks), size, compress, gzip_allowed(exec, commands, compress))
        encoding = "gzip" if gzip else "identity"
        started = time.monotonic()
        argv = push_argv(commands, path, digest, size, replace, mode, encoding)
        exit = run_small(exec, argv, stream)
        if trailed:
            digest = chunks.hexdigest()  # type: ignore[attr-defined]
        return pushed(exec, path, digest, size, encoding, exit, started)
    finally:
        close = getattr(chunks, "close", None)
        if callable(close):
            close()


def push_bytes(exec: ExecAdapter, data: bytes, path: str, **options: object) -> PushResult:
    """Pushes ``data`` (in memory) into the sandbox at ``path``, as :func:`push_stream`. With
    stdin the bytes start at once, hashed on a second thread while they travel; their SHA-256
    follows them, and the sandbox checks them against it before they are put in place."""
    view = memoryview(data).cast("B")
    # The base64 fallback names the SHA-256 in its first command; below TRAILED_FROM hashing
    # first costs less than cutting the SHA-256 off in the sandbox.
    if not exec.stdin or len(view) < TRAILED_FROM:
        chunks = (view[i : i + READ_BYTES] for i in range(0, len(view), READ_BYTES))
        return push_stream(
            exec, chunks, path, sha256=hashlib.sha256(view).hexdigest(), size=len(view), **options  # type: ignore[arg-type]
        )
    check_push(path, "0" * 64, len(view))
    return push_stream(exec, _Trailed(view), path, sha256=_TRAILED, size=len(view), **options)  # type: ignore[arg-type]


#: The SHA-256 argument that tells the sandbox's push script to read it after the bytes.
_TRAILED = "-"
#: From this size push_bytes sends the SHA-256 after the bytes.
TRAILED_FROM = 1024 * 1024


class _Trailed:
    """``view``'s bytes in slices of ``READ_BYTES``, then their SHA-256 in hex and a newline:
    hashed by a thread of its own (hashlib lets go of the GIL), beside the sending."""

    def __init__(self, view: memoryview) -> None:
        self._view = view
        self._digest = hashlib.sha256()
        self._hashing = threading.Thread(target=self._digest.update, args=(view,), daemon=True)
        self._hashing.start()

    def __iter__(self) -> Iterator[bytes]:
        view = self._view
        for at in range(0, len(view), READ_BYTES):
            yield view[at : at + READ_BYTES]  # type: ignore[misc]
        yield (self.hexdigest() + "\n").encode()

    def hexdigest(self) -> str:
        self._hashing.join()
        return self._digest.hexdigest()


def push_local_file(
    exec: ExecAdapter,
    local_path: Union[str, "os.PathLike[str]"],
    path: str,
    *,
    sha256: Optional[str] = None,
    readonly: bool = False,
    overwrite: bool = False,
    compress: str = "auto",
    max_base64_bytes: int = MAX_BASE64_BYTES,
) -> PushResult:
    """Pushes the local file into the sandbox at ``path``: checked there by SHA-256 and only
    then put in place. Sent as it is, the open file is the CLI's stdin: its bytes never pass
    through this process."""
    with open(local_path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not _is_regular(info.st_mode):
            raise ValueError(f"Airlock: not a regular file: {local_path}")
        size = info.st_size
        digest = check_push(path, sha256 or _sha256_of(handle), size)
        options = dict(readonly=readonly, overwrite=overwrite, compress=compress)
        if not exec.stdin:
            return push_stream(
                exec, _read_from(handle, 0), path, sha256=digest, size=size,
                max_base64_bytes=max_base64_bytes, **options,  # type: ignore[arg-type]
            )
        commands = with_hasher(exec)
        if gzip_allowed(exec, commands, compress) and (
            compress == "always" or _gzip_pays(os.pread(handle.fileno(), SAMPLE_BYTES, 0))
        ):
            return push_stream(exec, _read_from(handle, 0), path, sha256=digest, size=size, **options)  # type: ignore[arg-type]
        handle.seek(0)
        started = time.monotonic()
        argv = push_argv(commands, path, digest, size, "1" if overwrite else "0", "0444" if readonly else "", "identity")
        process = exec.start(argv, handle, subprocess.PIPE)
        assert process.stdout is not None
        out = process.stdout.read(65536)
        process.stdout.close()
        exit = process.wait()
        exit.stdout = out.decode("utf-8", "replace")
        return pushed(exec, path, digest, size, "identity", exit, started)


def push_argv(
    commands: SandboxCommands, path: str, sha256: str, size: int, replace: str, mode: str, encoding: str
) -> List[str]:
    """The sandbox command that takes the bytes on stdin, checks and places them."""
    return [
        "sh", "-c", push_script(commands), "airlock-push", path, sha256, replace, mode,
        secrets.token_hex(6), encoding, str(size),
    ]


def pushed(
    exec: ExecAdapter, path: str, sha256: str, size: int, encoding: str, exit: ExecExit, started: float
) -> PushResult:
    if exit.code != 0 or exit.stdout.strip() != "ok":
        raise push_failure(exec, path, exit)
    record_rate(exec, "push", encoding, size, time.monotonic() - started)
    return PushResult(path, size, sha256, encoding)


def gzip_allowed(exec: ExecAdapter, commands: SandboxCommands, compress: str) -> bool:
    if commands.inflate is None or compress == "never":
        return False
    return compress == "always" or gzip_may_pay(exec, "push")


def _gzip_pays(sample: bytes) -> bool:
    """Whether the first 64 KiB shrink by 10 % or more under gzip -1."""
    if len(sample) < SAMPLE_BYTES:
        return False
    deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
    size = len(deflate.compress(sample[:SAMPLE_BYTES])) + len(deflate.flush())
    return size * 10 <= SAMPLE_BYTES * 9


def _maybe_gzip(
    source: Iterator[bytes], size: int, compress: str, can_gzip: bool
) -> "tuple[Iterator[bytes], bool]":
    if not can_gzip or compress == "never":
        return source, False
    if compress == "always":
        return _gzipped(source), True
    if size <= SAMPLE_BYTES:
        return source, False
    head: List[bytes] = []
    have = 0
    for chunk in source:
        head.append(chunk)
        have += len(chunk)
        if have >= SAMPLE_BYTES:
            break
    whole = itertools.chain(head, source)
    if _gzip_pays(b"".join(head)[:SAMPLE_BYTES]):
        return _gzipped(whole), True
    return whole, False


def _gzipped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    for chunk in chunks:
        out = deflate.compress(chunk)
        if out:
            yield out
    yield deflate.flush()


def _sha256_of(handle: IO[bytes]) -> str:
    digest = hashlib.sha256()
    handle.seek(0)
    for block in iter(lambda: handle.read(READ_BYTES), b""):
        digest.update(block)
    return digest.hexdigest()


def _read_from(handle: IO[bytes], offset: int) -> Iterator[bytes]:
    handle.seek(offset)
    return iter(lambda: handle.read(READ_BYTES), b"")


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)
