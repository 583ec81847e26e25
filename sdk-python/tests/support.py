"""What the Python tests share: the relay, the stand-in CLIs and the sshd that
test/sdk/python-sdk.test.ts starts and describes in the environment (``npm test`` runs them
that way), and small helpers. Without that environment the tests that need it are skipped."""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import unittest
import urllib.request
from typing import Any, Callable, Dict, List, Optional

from airlock_sdk import AirlockClient, AirlockError
from airlock_sdk.exec import ssh_exec

ENV = os.environ
RELAY_URL = ENV.get("AIRLOCK_TEST_URL", "")
ADMIN_TOKEN = ENV.get("AIRLOCK_TEST_ADMIN_TOKEN", "")
STANDIN_BIN = ENV.get("AIRLOCK_TEST_STANDIN_BIN", "")
WORK_DIR = ENV.get("AIRLOCK_TEST_DIR", "")
SHIM = ENV.get("AIRLOCK_TEST_SHIM", "")
SSH: Dict[str, Any] = json.loads(ENV.get("AIRLOCK_TEST_SSH", "null") or "null") or {}
TELEGRAM: Dict[str, str] = json.loads(ENV.get("AIRLOCK_TEST_TELEGRAM", "null") or "null") or {}

MiB = 1024 * 1024
needs_relay = unittest.skipUnless(RELAY_URL and WORK_DIR, "run through npm test (test/sdk/python-sdk.test.ts)")
needs_stand_ins = unittest.skipUnless(STANDIN_BIN, "needs the stand-in docker / kubectl")
needs_sshd = unittest.skipUnless(SSH, "needs the test sshd")
needs_telegram = unittest.skipUnless(TELEGRAM, "needs the fake Telegram server")

if STANDIN_BIN and not ENV.get("PATH", "").startswith(STANDIN_BIN + ":"):
    ENV["PATH"] = f"{STANDIN_BIN}:{ENV.get('PATH', '')}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def operator() -> AirlockClient:
    return AirlockClient(RELAY_URL, admin_token=ADMIN_TOKEN)


def fresh_dir(prefix: str) -> str:
    path = os.path.join(WORK_DIR, f"{prefix}{secrets.token_hex(4)}")
    os.makedirs(path)
    return path


def refusal(call: Callable[[], object]) -> Dict[str, Any]:
    """The AirlockError ``call`` raises, as ``{status, code, message}``."""
    try:
        call()
    except AirlockError as error:
        return {"status": error.status, "code": error.code, "message": error.message}
    raise AssertionError("expected an AirlockError")


def ssh_adapter() -> Any:
    return ssh_exec(
        SSH["host"], user=SSH["user"], port=SSH["port"], identity_file=SSH["identityFile"],
        control_path=SSH["controlPath"], ssh_args=SSH["sshArgs"],
    )


class StandIns:
    """The stand-in docker / kubectl (test/sdk/stand-in-cli.ts): config.json beside them
    says which PATH a container runs with and which byte to flip; calls/ records each call."""

    @staticmethod
    def configure(config: Optional[Dict[str, Any]] = None) -> None:
        with open(os.path.join(STANDIN_BIN, "config.json"), "w") as handle:
            json.dump(config or {}, handle)

    @staticmethod
    def clear() -> None:
        calls = os.path.join(STANDIN_BIN, "calls")
        for name in os.listdir(calls):
            os.unlink(os.path.join(calls, name))

    @staticmethod
    def calls() -> List[Dict[str, Any]]:
        calls = os.path.join(STANDIN_BIN, "calls")
        found = []
        for name in sorted(n for n in os.listdir(calls) if n.endswith(".json")):
            with open(os.path.join(calls, name)) as handle:
                call = json.load(handle)
            with open(os.path.join(calls, name[: -len(".json")] + ".stdin"), "rb") as handle:
                call["stdin"] = handle.read()
            found.append(call)
        return found


def sandbox_path(directory: str, extra: List[str]) -> str:
    """A directory to use as a sandbox's whole PATH: the POSIX tools the scripts use plus
    ``extra``, and nothing else (no sha256sum, openssl, gzip)."""
    os.makedirs(directory, exist_ok=True)
    base = ["sh", "cat", "tee", "mv", "ln", "rm", "chmod", "dirname", "basename", "wc", "tr", "dd"]
    for tool in base + extra:
        link = os.path.join(directory, tool)
        if not os.path.lexists(link):
            real = shutil.which(tool, path="/usr/local/bin:/usr/bin:/bin") if tool != "python3" else None
            os.symlink(real or _python3(), link)
    return directory


def _python3() -> str:
    return subprocess.run(
        ["python3", "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, check=True
    ).stdout.strip()


def telegram_requests(api: str) -> List[Dict[str, Any]]:
    """What the fake Telegram server recorded for one Bot API method."""
    origin = TELEGRAM["controlOrigin"]
    with urllib.request.urlopen(f"{origin}/__control/requests?api={api}") as answer:
        return json.load(answer)


def telegram_add_file(name: str, data: bytes, content_type: str) -> Dict[str, Any]:
    """A file the fake Telegram server serves (as if a person had sent it): its reference."""
    from urllib.parse import quote

    origin = TELEGRAM["controlOrigin"]
    request = urllib.request.Request(
        f"{origin}/__control/files?name={quote(name)}&contentType={quote(content_type)}", data=data, method="POST"
    )
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)
