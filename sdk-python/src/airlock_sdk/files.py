"""Downloads streamed to disk (a large file in parallel ranges: :mod:`.ranged`): into a temp file
beside the target, hashed as they come, checked against the file record (size and SHA-256),
synced, then renamed into place (to a path the caller chose) or given the file's cleaned name in
a directory (never over an existing file)."""
from __future__ import annotations

import errno
import hashlib
import os
import secrets
from typing import Any, Dict, Optional, Protocol, Tuple

from ._http import Response
from .errors import AirlockError
from .names import clean_file_name, file_name_problem, numbered_file_name, truncate_utf8
from .ranged import maybe_ranges

FileRecord = Dict[str, Any]

_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV}


class FileReader(Protocol):
    """Either client: what the download helpers need."""

    def get_file(self, file_id: str) -> FileRecord: ...

    def download(self, file_id: str, range: Optional[Tuple[int, Optional[int]]] = None) -> Response: ...


def temp_near(directory: str, name: str) -> str:
    """A temp file's path beside ``name`` in ``directory`` (the name cut to 100 bytes)."""
    return os.path.join(
        directory, f".{truncate_utf8(name, 100)}.{secrets.token_hex(6)}.airlock-part"
    )


def download_to_file(files: FileReader, file_id: str, path: str) -> FileRecord:
    """Streams a file's bytes to ``path`` (replacing a file there), checked first; on any
    failure ``path`` is untouched and no temp file is left. A mismatch is ``download_mismatch``.
    ``path`` is the caller's choice: one whose name breaks the name rule or that climbs out of a
    directory it names is refused (``ValueError``); for names from the relay use
    :func:`download_to_dir`."""
    _refuse_unchecked_path(path)
    record = files.get_file(file_id)
    target = os.path.abspath(path)
    temp = temp_near(os.path.dirname(target), os.path.basename(target))
    _receive(files, record, temp)
    try:
        os.replace(temp, target)
    except BaseException:
        _remove(temp)
        raise
    return record


def download_to_dir(files: FileReader, file_id: str, directory: str) -> FileRecord:
    """Streams a file's bytes into ``directory`` under its own name, cleaned by the name rule,
    never replacing a file (``name (1).ext``, ...). Returns the record with ``path`` added."""
    record = files.get_file(file_id)
    folder = os.path.abspath(directory)
    name = clean_file_name(str(record.get("name", "")), "file")
    temp = temp_near(folder, name)
    _receive(files, record, temp)
    try:
        return {**record, "path": _claim_name(temp, folder, name)}
    finally:
        _remove(temp)


def _receive(files: FileReader, record: FileRecord, temp: str) -> None:
    """The file's bytes into a new file ``temp`` (a large one in parallel ranges: see
    :func:`maybe_ranges`), checked against the record and synced; removed on any failure."""
    fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)  # read too: ranges are hashed back
    response: Optional[Response] = None
    try:
        with os.fdopen(fd, "r+b") as out:
            got = maybe_ranges(files, record, out.fileno())
            size = record["size"]
            if got is None:
                response = files.download(record["fileId"])
                digest = hashlib.sha256()
                size = 0
                for chunk in response.iter_chunks():
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
                got = digest.hexdigest()
            if size != record["size"] or got != record["sha256"]:
                raise AirlockError(
                    0,
                    "download_mismatch",
                    f"downloaded {size} bytes with SHA-256 {got}, but file {record['fileId']} is "
                    f"{record['size']} bytes with SHA-256 {record['sha256']}; nothing was kept",
                )
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        if response is not None:
            response.close()
        _remove(temp)
        raise


def _claim_name(temp: str, directory: str, name: str) -> str:
    for n in range(10_001):
        path = os.path.join(directory, numbered_file_name(name, n))
        try:
            try:
                os.link(temp, path)
            except OSError as error:
                if error.errno not in _NO_HARD_LINKS:
                    raise
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                try:
                    os.replace(temp, path)
                except BaseException:
                    _remove(path)
                    raise
            return path
        except FileExistsError:
            continue
    raise OSError(f"Airlock: too many files named {name} in {directory}")


def _refuse_unchecked_path(path: str) -> None:
    parts = path.split("/")
    name = parts[-1]
    problem = None if name == "" else file_name_problem(name)
    if problem is not None:
        raise ValueError(
            f"Airlock: download_to_file's file name {problem}; for names from the relay, use download_to_dir"
        )
    named = False
    for part in parts:
        if part in ("", "."):
            continue
        if part != "..":
            named = True
        elif named:
            raise ValueError(
                "Airlock: download_to_file's path climbs out of a directory it names; "
                "for names from the relay, use download_to_dir"
            )


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
