"""The base64 fallback of a push, for an exec API that takes no stdin: one command per 64 KiB
of base64, then a check and the rename."""
from __future__ import annotations

import base64
import itertools
import secrets
from typing import Iterable

from ..errors import exec_error
from .core import ExecAdapter, run_small
from .push_contract import PushResult, push_failure
from .scripts import SandboxCommands, chunk_script, chunked_finish_script, chunked_open_script

CHUNK_RAW_BYTES = 48 * 1024
MAX_BASE64_BYTES = 16 * 1024 * 1024


def refuse_too_large_for_base64(exec: ExecAdapter, path: str, size: int, limit: int) -> None:
    if size <= limit:
        return
    commands = -(-limit // CHUNK_RAW_BYTES)
    raise exec_error(
        "too_large_for_base64",
        f"push to {path} in {exec.label}: it takes no stdin, and {size} bytes is more than the "
        f"base64 fallback moves ({limit} bytes, {commands} commands); nothing was moved",
    )


def push_chunked(
    exec: ExecAdapter,
    commands: SandboxCommands,
    chunks: Iterable[bytes],
    path: str,
    sha256: str,
    mode: str,
    replace: str,
    size: int,
) -> PushResult:
    """The base64 fallback: one command per 64 KiB of base64, then a check and the rename."""
    if not commands.decode_base64:
        raise exec_error(
            "sandbox_cannot_decode",
            f"{exec.label} takes no stdin and has none of base64, openssl, python3 or node to decode base64; nothing was moved",
        )
    opened = run_small(
        exec, ["sh", "-c", chunked_open_script(commands), "airlock-push", path, sha256, replace, mode, secrets.token_hex(6)]
    )
    if opened.code != 0:
        raise push_failure(exec, path, opened)
    tmp = opened.stdout[:-1] if opened.stdout.endswith("\n") else opened.stdout
    append = chunk_script(commands)
    sent = 0
    try:
        pending = b""
        for chunk in itertools.chain(chunks, [b""]):
            pending += chunk
            while len(pending) >= CHUNK_RAW_BYTES or (chunk == b"" and pending):
                piece, pending = pending[:CHUNK_RAW_BYTES], pending[CHUNK_RAW_BYTES:]
                exit = run_small(exec, ["sh", "-c", append, "airlock-chunk", tmp, base64.b64encode(piece).decode()])
                if exit.code != 0:
                    raise push_failure(exec, path, exit)
                sent += len(piece)
    except BaseException:
        try:
            run_small(exec, ["rm", "-f", "--", tmp])
        except AirlockError:
            pass
        raise
    finish = chunked_finish_script(commands)
    exit = run_small(exec, ["sh", "-c", finish, "airlock-finish", tmp, path, sha256, replace, mode, str(size)])
    if exit.code != 0 or exit.stdout.strip() != "ok":
        raise push_failure(exec, path, exit)
    return PushResult(path, sent, sha256, "base64-chunks")
