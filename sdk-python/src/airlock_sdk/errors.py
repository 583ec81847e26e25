"""The one error type the SDK raises for anything the relay refused or could not be asked."""
from __future__ import annotations

import json
from typing import Optional

#: Why a move of bytes through a sandbox's exec channel was refused (``status`` is then 0).
EXEC_ERROR_CODES = (
    "exec_unavailable",
    "exec_failed",
    "sandbox_cannot_verify",
    "sandbox_cannot_decode",
    "too_large_for_base64",
    "sandbox_file_unreadable",
    "sandbox_cannot_write",
    "target_exists",
    "transfer_mismatch",
)


class AirlockError(Exception):
    """A refused or failed request.

    - The relay's refusals carry its HTTP ``status`` and the ``code`` and ``message`` of its
      ``{"error": {"code", "message"}}`` answer.
    - ``status == 0, code == "network_error"``: the relay could not be reached.
    - ``code == "invalid_response"``: the answer was not what the API promises.
    - ``status == 0, code == "download_mismatch"``: downloaded bytes differ from the record.
    - ``status == 0`` with one of :data:`EXEC_ERROR_CODES`: the exec transport refused or
      failed; nothing was placed in the sandbox or stored at the relay.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"AirlockError(status={self.status}, code={self.code!r}, message={self.message!r})"


def exec_error(code: str, message: str) -> AirlockError:
    """An exec transport refusal: ``status`` 0 (no relay answer is involved)."""
    return AirlockError(0, code, message)


def error_from_body(status: int, body: bytes, what: str) -> AirlockError:
    """The error a relay answer that is not 2xx stands for."""
    text = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
        error: Optional[object] = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
            if isinstance(code, str) and isinstance(message, str):
                return AirlockError(status, code, message)
    except ValueError:
        pass
    snippet = " ".join(text.split())[:200]
    return AirlockError(
        status, "invalid_response", f"{what}: HTTP {status}{' ' + snippet if snippet else ''}"
    )
