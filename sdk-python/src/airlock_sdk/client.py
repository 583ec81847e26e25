"""The operator's client (:class:`AirlockClient`) and a sandbox session's
(:class:`AirlockSession`). Each sends exactly one credential, fixed when it is made."""
from __future__ import annotations

import os
import stat
from typing import IO, Any, Dict, Iterable, List, Optional, Union

from ._http import Call, Response, SizedBody, Transport, segment
from .errors import AirlockError
from .exec.collect import collect_stream
from .exec.core import ExecAdapter
from .exec.push import MAX_BASE64_BYTES, PushResult, push_stream
from .files import FileRecord, download_to_dir, download_to_file
from .sizes import parse_size

Record = Dict[str, Any]
#: What ``seed_inbox`` takes: bytes, a path, a binary file object or an iterable of chunks.
SeedInput = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", IO[bytes], Iterable[bytes]]


class _FileAccess:
    """What both clients can do with the files they may see."""

    def __init__(self, url: str, credential: Optional[str], retries: int, timeout: float) -> None:
        self._transport = Transport(url, retries=retries, timeout=timeout)
        self._credential = credential
        self._retries = retries
        self._timeout = timeout

    def __repr__(self) -> str:  # tokens never show
        return f"{type(self).__name__}(url={self.url!r})"

    @property
    def url(self) -> str:
        """The relay's base URL, without a trailing slash."""
        return self._transport.base_url

    def _token(self) -> str:
        assert self._credential
        return self._credential

    def _json(self, method: str, path: str, **fields: Any) -> Any:
        return self._transport.json(Call(method, path, self._token(), **fields))

    def get_file(self, file_id: str) -> FileRecord:
        """One file's record, with a fresh share link (``url``); 404 ``file_not_found`` if not visible."""
        return self._json("GET", f"/v1/files/{segment(file_id)}")

    def download(self, file_id: str, range: Optional["tuple[int, Optional[int]]"] = None) -> Response:
        """The file's original bytes as a streaming :class:`Response` (``iter_chunks()``,
        ``read()``; close it). On an s3 relay they come straight from the store."""
        headers = {"accept": "*/*"}
        if range is not None:
            start, end = range
            headers["range"] = f"bytes={start}-{'' if end is None else end}"
        return self._transport.send(Call("GET", f"/v1/files/{segment(file_id)}/content", self._token(), headers=headers))

    def download_to_file(self, file_id: str, path: str) -> FileRecord:
        """Streams a file to ``path``: temp file, size and SHA-256 checked, renamed into place."""
        return download_to_file(self, file_id, path)

    def download_to_dir(self, file_id: str, directory: str) -> FileRecord:
        """Streams a file into ``directory`` under its cleaned name, never over a file; the
        record comes back with ``path``."""
        return download_to_dir(self, file_id, directory)

    def list_deliveries(self, file_id: str) -> List[Record]:
        """Every delivery of the file to a chat, delivered and failed."""
        return self._json("GET", f"/v1/files/{segment(file_id)}/deliveries")["deliveries"]

    def create_share_link(
        self, file_id: str, ttl_seconds: Optional[int] = None, max_downloads: Optional[int] = None
    ) -> Record:
        """A new share link of the file: ``{url, expiresAt, maxDownloads}``."""
        body: Record = {}
        if ttl_seconds is not None:
            body["ttlSeconds"] = ttl_seconds
        if max_downloads is not None:
            body["maxDownloads"] = max_downloads
        return self._json("POST", f"/v1/files/{segment(file_id)}/links", json=body)

    def delete_file(self, file_id: str) -> Record:
        """Deletes a file: it leaves listings and the quota at once."""
        return self._json("DELETE", f"/v1/files/{segment(file_id)}")

    def push_file(
        self,
        exec: ExecAdapter,
        file_id: str,
        path: str,
        *,
        readonly: bool = False,
        overwrite: bool = False,
        compress: str = "auto",
        max_base64_bytes: int = MAX_BASE64_BYTES,
    ) -> PushResult:
        """Pushes a relay file into a sandbox at ``path`` through its exec channel (for a sandbox
        with no network): streamed through the command's stdin, checked by SHA-256 inside the
        sandbox, then renamed into place. See :func:`airlock_sdk.exec.push_stream`."""
        record = self.get_file(file_id)
        response = self.download(file_id)
        try:
            return push_stream(
                exec, response.iter_chunks(), path, sha256=record["sha256"], size=record["size"],
                readonly=readonly, overwrite=overwrite, compress=compress, max_base64_bytes=max_base64_bytes,
            )
        finally:
            response.close()

    def _list(self, query: Dict[str, Optional[str]]) -> List[FileRecord]:
        return self._json("GET", "/v1/files", query=query)["files"]


class AirlockSession(_FileAccess):
    """A sandbox session's client: what the shim does, for host code acting for a session."""

    def __init__(self, url: str, token: str, retries: int = 2, timeout: float = 300.0) -> None:
        if not token:
            raise TypeError("Airlock: AirlockSession needs a token")
        super().__init__(url, token, retries, timeout)

    def inbox(self) -> List[Record]:
        """Files people and the operator sent the session, oldest first."""
        return self._json("GET", "/v1/inbox")["items"]

    def ack(self, item_id: str) -> Record:
        """Takes an item out of the inbox (after its file is safely stored). Twice is fine."""
        return self._json("POST", f"/v1/inbox/{segment(item_id)}/ack")

    def list_files(self, origin: Optional[str] = None) -> List[FileRecord]:
        """The session's own files, newest first."""
        return self._list({"origin": origin})

    def deliver(
        self, file_id: str, to: str, caption: Optional[str] = None, idempotency_key: Optional[str] = None
    ) -> Record:
        """Sends one of the session's files to a chat bound to the session. Never retried by
        the SDK; pass ``idempotency_key`` when retrying yourself."""
        body: Record = {"to": to} if caption is None else {"to": to, "caption": caption}
        headers = {} if idempotency_key is None else {"idempotency-key": idempotency_key}
        return self._json("POST", f"/v1/files/{segment(file_id)}/deliveries", json=body, headers=headers)

    def create_upload_link(
        self,
        name: Optional[str] = None,
        max_bytes: Union[int, str, None] = None,
        ttl_seconds: Optional[int] = None,
    ) -> Record:
        """A single-use link a person uploads one file to (``airlock request``):
        ``{requestId, url, name, maxBytes, expiresAt}``. ``max_bytes`` is bytes, or a size as
        ``airlock request --max-bytes`` takes it (``"10M"`` is 10 MiB: ``parse_size``)."""
        if isinstance(max_bytes, str):
            parsed = parse_size(max_bytes)
            if parsed is None:
                raise ValueError("max_bytes must be a positive size such as 500M or 20G, not %r" % max_bytes)
            max_bytes = parsed
        body: Record = {}
        for key, value in (("name", name), ("maxBytes", max_bytes), ("ttlSeconds", ttl_seconds)):
            if value is not None:
                body[key] = value
        return self._json("POST", "/v1/requests", json=body)

    def upload_link(self, request_id: str) -> Record:
        """An upload link's state: ``open``, ``received`` (with ``fileId``) or ``expired``."""
        return self._json("GET", f"/v1/requests/{segment(request_id)}")


class AirlockClient(_FileAccess):
    """The operator's client: mints and revokes sessions, seeds their inboxes, reads every
    session's files and deliveries, and moves files through a sandbox's exec channel. Every
    call sends ``admin_token``; for what only a sandbox may do use :meth:`as_session`."""

    def __init__(
        self,
        url: str,
        admin_token: Optional[str] = None,
        token: Optional[str] = None,
        retries: int = 2,
        timeout: float = 300.0,
    ) -> None:
        super().__init__(url, admin_token, retries, timeout)
        self._session_token = token

    def _token(self) -> str:
        if not self._credential:
            raise TypeError(
                "Airlock: this is an operator call and the client has no admin_token; "
                "for a session's calls use client.as_session(token)"
            )
        return self._credential

    def as_session(self, token: Optional[str] = None) -> AirlockSession:
        """A client acting as a sandbox session (default: the ``token`` this client was made with)."""
        chosen = token or self._session_token
        if not chosen:
            raise TypeError("Airlock: as_session needs a session token")
        return AirlockSession(self.url, chosen, self._retries, self._timeout)

    def create_session(
        self,
        destinations: Optional[List[str]] = None,
        quota_bytes: Optional[int] = None,
        ttl_seconds: Optional[int] = None,
        owner: Optional[str] = None,
    ) -> Record:
        """Mints a sandbox session: ``{sessionId, token, expiresAt, destinations, quotaBytes}``.
        The ``token`` is what the sandbox gets as ``AIRLOCK_TOKEN``."""
        body: Record = {}
        for key, value in (
            ("destinations", destinations), ("quotaBytes", quota_bytes), ("ttlSeconds", ttl_seconds), ("owner", owner),
        ):
            if value is not None:
                body[key] = value
        return self._json("POST", "/v1/sessions", json=body)

    def revoke_session(self, session_id: str) -> Record:
        """Revokes a session: its token stops working at once (401 ``session_revoked``)."""
        return self._json("DELETE", f"/v1/sessions/{segment(session_id)}")

    def seed_inbox(
        self,
        session_id: str,
        data: SeedInput,
        name: Optional[str] = None,
        content_type: str = "application/octet-stream",
        size: Optional[int] = None,
    ) -> Record:
        """Puts a file into a session's inbox; the sandbox gets it with ``airlock pull``. Takes
        bytes, a file path (streamed, its size from ``fstat``, its name the default), or a binary
        file object or iterable of chunks with their exact ``size``. Never buffers a stream."""
        if isinstance(data, (str, os.PathLike)):
            with open(data, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise ValueError(f"Airlock: not a regular file: {data}")
                return self._seed(session_id, handle, info.st_size, name or os.path.basename(data), content_type)
        if not name:
            raise TypeError("Airlock: seed_inbox needs a name")
        if isinstance(data, (bytes, bytearray, memoryview)):
            return self._seed(session_id, bytes(data), len(data), name, content_type)
        if not isinstance(size, int) or size < 0:
            raise TypeError("Airlock: a stream needs size, its exact length")
        return self._seed(session_id, data, size, name, content_type)

    def _seed(self, session_id: str, data: Any, size: int, name: str, content_type: str) -> Record:
        return self._json(
            "POST", f"/v1/sessions/{segment(session_id)}/inbox",
            query={"name": name}, body=SizedBody(data, size, content_type),
        )

    def list_files(self, session_id: Optional[str] = None, origin: Optional[str] = None) -> List[FileRecord]:
        """Every session's files (newest first), or one session's."""
        return self._list({"sessionId": session_id, "origin": origin})

    def collect_file(
        self,
        exec: ExecAdapter,
        session_id: str,
        path: str,
        name: Optional[str] = None,
        content_type: str = "application/octet-stream",
        compress: str = "auto",
    ) -> FileRecord:
        """Collects the file at ``path`` in a session's sandbox through its exec channel and
        stores it as a file of that session: hashed in the sandbox, checked on the way, hashed
        again by the relay. Nothing is stored after a refusal."""
        collected = collect_stream(exec, path, compress)
        chunks = collected.chunks()
        label = name or next((part for part in reversed(path.split("/")) if part), "file")
        try:
            return self._json(
                "POST", f"/v1/sessions/{segment(session_id)}/files",
                query={"name": label}, body=SizedBody(chunks, collected.size, content_type),
            )
        except AirlockError as error:
            # Bytes that did not arrive intact are the cause of whatever the upload then met.
            raise collected.failure or error
        finally:
            chunks.close()
