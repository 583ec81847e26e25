"""What a push into a sandbox gives, and how a refused one is worded."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import AirlockError
from .core import ExecAdapter, ExecExit, exec_failure
from .scripts import EXIT


@dataclass
class PushResult:
    """What a push did: the sandbox path written, the bytes' size and SHA-256, and how they
    travelled (``identity``, ``gzip`` or ``base64-chunks``)."""

    path: str
    size: int
    sha256: str
    transfer: str


_PUSH_EXIT_CODES = {
    EXIT.EXISTS: "target_exists",
    EXIT.MISMATCH: "transfer_mismatch",
    EXIT.NO_DIRECTORY: "sandbox_cannot_write",
    EXIT.CANNOT_CREATE: "sandbox_cannot_write",
    EXIT.CANNOT_PLACE: "sandbox_cannot_write",
}


def push_failure(exec: ExecAdapter, path: str, exit: ExecExit) -> AirlockError:
    return exec_failure(exec, f"push to {path}", exit, _PUSH_EXIT_CODES.get(exit.code, "exec_failed"))
