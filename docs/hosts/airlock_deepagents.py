"""deepagents-style sandbox file transfer through Airlock.

deepagents' ``BaseSandbox`` leaves ``upload_files(files)`` and ``download_files(paths)``
abstract: each takes a batch and answers one result per item, in order, never raising for one
item's failure (``FileUploadResponse(path, error)``, ``FileDownloadResponse(path, content,
error)``, ``error`` one of ``file_not_found``, ``permission_denied``, ``is_directory``,
``invalid_path``, or a backend's own text), and an upload creates the parent directories and
replaces a file already there. Two ways to implement them, each a mixin for your sandbox class:

- :class:`ExecTransportFiles`: the bytes go through the exec channel you already have
  (``docker exec -i``, ``ssh``, ``kubectl exec -i``), streamed on stdin/stdout, checked by
  SHA-256 inside the sandbox, placed by rename. The sandbox needs no network.
- :class:`HttpsFiles`: the sandbox has outbound HTTPS and the ``airlock`` shim; the bytes go
  sandbox <-> relay, checked by SHA-256 at both ends; the exec channel only runs the shim.

Paths must be absolute and inside ``root`` (default ``/``); anything else is ``invalid_path``.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from airlock_sdk import AirlockClient, AirlockError
from airlock_sdk.exec import ExecAdapter, collect_bytes, push_bytes
from airlock_sdk.exec.core import ExecExit, run_small

try:  # deepagents' own result types when it is installed
    from deepagents.backends.protocol import FileDownloadResponse, FileUploadResponse  # type: ignore
except ImportError:  # the same shapes

    @dataclass
    class FileDownloadResponse:  # type: ignore[no-redef]
        path: str
        content: Optional[bytes] = None
        error: Optional[str] = None

    @dataclass
    class FileUploadResponse:  # type: ignore[no-redef]
        path: str
        error: Optional[str] = None


# One command classifies every path of a batch: ok, file_not_found, is_directory, permission_denied.
_CLASSIFY = (
    'for p; do if [ -d "$p" ]; then echo is_directory; elif [ ! -e "$p" ]; then echo file_not_found; '
    'elif [ ! -r "$p" ]; then echo permission_denied; else echo ok; fi; done'
)
_MKDIRS = 'for d; do mkdir -p -- "$d" 2>/dev/null || echo "$d"; done; exit 0'


class _Paths:
    root: str = "/"

    def _inside(self, path: str) -> Optional[str]:
        """The path, normalised, when it is absolute and inside the root; else None."""
        if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
            return None
        clean = posixpath.normpath(path)
        root = posixpath.normpath(self.root)
        return clean if clean == root or clean.startswith(root.rstrip("/") + "/") else None

    def _classify(self, exec: ExecAdapter, paths: Sequence[str]) -> List[str]:
        if not paths:
            return []
        exit = run_small(exec, ["sh", "-c", _CLASSIFY, "airlock-classify", *paths])
        kinds = exit.stdout.split()
        if exit.code != 0 or len(kinds) != len(paths):
            raise AirlockError(0, "exec_failed", f"classifying paths in {exec.label}: {exit.stderr.strip()}")
        return kinds

    def _make_parents(self, exec: ExecAdapter, paths: Sequence[str]) -> List[str]:
        """Creates the parent directories; returns those that could not be made."""
        parents = sorted({posixpath.dirname(path) for path in paths})
        if not parents:
            return []
        said = run_small(exec, ["sh", "-c", _MKDIRS, "airlock-mkdirs", *parents]).stdout
        return [line for line in said.split("\n") if line]


def _upload_error(error: AirlockError) -> str:
    if error.message.endswith(" is a directory"):
        return "is_directory"
    if error.code == "sandbox_cannot_write":
        return "permission_denied"
    return error.message


class ExecTransportFiles(_Paths):
    """``upload_files`` / ``download_files`` over the exec channel (no network in the sandbox)."""

    def __init__(self, exec: ExecAdapter, root: str = "/") -> None:
        self.airlock_exec = exec
        self.root = root

    def upload_files(self, files: List[Tuple[str, bytes]]) -> List[FileUploadResponse]:
        results = []
        for path, content in files:
            target = self._inside(path)
            results.append(FileUploadResponse(path=path, error="invalid_path" if target is None else self._upload(target, content)))
        return results

    def _upload(self, target: str, content: bytes) -> Optional[str]:
        # One command when the directory is there; a missing one is made, then the push again.
        for attempt in range(2):
            try:
                push_bytes(self.airlock_exec, content, target, overwrite=True)
                return None
            except AirlockError as error:
                missing = error.code == "sandbox_cannot_write" and ": no such directory: " in error.message
                if attempt == 1 or not missing:
                    return _upload_error(error)
                if self._make_parents(self.airlock_exec, [target]):
                    return "permission_denied"
        return None

    def download_files(self, paths: List[str]) -> List[FileDownloadResponse]:
        results = []
        for path in paths:
            target = self._inside(path)
            if target is None:
                results.append(FileDownloadResponse(path=path, content=None, error="invalid_path"))
                continue
            try:
                content = collect_bytes(self.airlock_exec, target)
                results.append(FileDownloadResponse(path=path, content=content, error=None))
            except AirlockError as error:
                # Only a refusal costs a second command: which kind of not-a-file it was.
                kind = self._classify(self.airlock_exec, [target])[0] if error.code == "sandbox_file_unreadable" else "ok"
                results.append(FileDownloadResponse(path=path, content=None, error=error.message if kind == "ok" else kind))
        return results


# Gets a file by id with the shim into a temp name beside DEST, then renames it over DEST.
_GET = (
    'dest=$1 id=$2; shift 2; tmp="${dest%/*}/.${dest##*/}.airlock-get.$$"; '
    '"$@" get "$id" -o "$tmp" >/dev/null || { rm -f -- "$tmp"; exit 1; }; '
    '[ -d "$dest" ] && { rm -f -- "$tmp"; echo "airlock: $dest is a directory" >&2; exit 21; }; '
    'mv -f -- "$tmp" "$dest" || { rm -f -- "$tmp"; exit 22; }'
)


class HttpsFiles(_Paths):
    """``upload_files`` / ``download_files`` with the bytes over HTTPS: the sandbox runs the
    ``airlock`` shim (``shim``, e.g. ``["airlock"]``) with its session's ``AIRLOCK_URL`` and
    ``AIRLOCK_TOKEN`` (``sandbox_env`` when its environment does not hold them already)."""

    def __init__(
        self,
        exec: ExecAdapter,
        airlock: AirlockClient,
        session: Dict[str, str],
        root: str = "/",
        shim: Sequence[str] = ("airlock",),
        sandbox_env: Optional[Dict[str, str]] = None,
    ) -> None:
        self.airlock_exec = exec
        self.airlock = airlock
        self.session = session
        self.root = root
        self.shim = list(shim)
        self.env = [f"{k}={v}" for k, v in (sandbox_env or {}).items()]

    def _run(self, argv: List[str]) -> ExecExit:
        return run_small(self.airlock_exec, ["env", *self.env, *argv] if self.env else argv)

    def upload_files(self, files: List[Tuple[str, bytes]]) -> List[FileUploadResponse]:
        inside = {path: self._inside(path) for path, _ in files}
        failed = set(self._make_parents(self.airlock_exec, [p for p in inside.values() if p]))
        sandbox = self.airlock.as_session(self.session["token"])
        results = []
        for path, content in files:
            target = inside[path]
            if target is None or posixpath.dirname(target) in failed:
                results.append(FileUploadResponse(path=path, error="invalid_path" if target is None else "permission_denied"))
                continue
            try:
                item = self.airlock.seed_inbox(self.session["sessionId"], content, name=posixpath.basename(target))
                sandbox.ack(item["itemId"])  # placed here, not by the agent's `airlock pull`
                exit = self._run(["sh", "-c", _GET, "airlock-get", target, item["file"]["fileId"], *self.shim])
                error = None if exit.code == 0 else ("is_directory" if exit.code == 21 else exit.stderr.strip() or f"exit code {exit.code}")
                results.append(FileUploadResponse(path=path, error=error))
            except AirlockError as error:
                results.append(FileUploadResponse(path=path, error=error.message))
        return results

    def download_files(self, paths: List[str]) -> List[FileDownloadResponse]:
        inside = [self._inside(path) for path in paths]
        kinds = iter(self._classify(self.airlock_exec, [p for p in inside if p]))
        results = []
        for path, target in zip(paths, inside):
            kind = "invalid_path" if target is None else next(kinds)
            if kind != "ok":
                results.append(FileDownloadResponse(path=path, content=None, error=kind))
                continue
            exit = self._run([*self.shim, "send", target, "--wait", "--json"])  # type: ignore[list-item]
            if exit.code != 0:
                results.append(FileDownloadResponse(path=path, content=None, error=exit.stderr.strip()))
                continue
            sent = json.loads(exit.stdout.strip().splitlines()[-1])
            with self.airlock.download(sent["fileId"]) as answer:
                content = answer.read()
            if hashlib.sha256(content).hexdigest() != sent["sha256"]:
                results.append(FileDownloadResponse(path=path, content=None, error="download_mismatch"))
            else:
                results.append(FileDownloadResponse(path=path, content=content, error=None))
        return results
