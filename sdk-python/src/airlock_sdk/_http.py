"""The SDK's one way to talk to the relay: ``http.client``, bearer auth, JSON in and out, relay
errors as :class:`AirlockError`, retries for idempotent GETs (backoff with jitter, honouring
``Retry-After``), redirects followed by hand (the bearer never leaves the relay's origin)."""
from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, Iterable, Iterator, Mapping, Optional, Union, cast
from urllib.parse import quote, urlencode, urljoin, urlsplit

from .errors import AirlockError, error_from_body

#: What a request body may be: bytes, a binary file object, or an iterable of byte chunks.
BodyData = Union[bytes, bytearray, memoryview, IO[bytes], Iterable[bytes]]

MAX_REDIRECTS = 3
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_BACKOFF_S = 5.0
MAX_RETRY_AFTER_S = 30.0
CHUNK = 256 * 1024


@dataclass
class SizedBody:
    """A request body of known length (the relay needs ``Content-Length``)."""

    data: BodyData
    size: int
    content_type: str = "application/octet-stream"


@dataclass
class Call:
    """One request to the relay."""

    method: str
    path: str
    token: str
    query: Mapping[str, Optional[str]] = field(default_factory=dict)
    json: Any = None
    body: Optional[SizedBody] = None
    headers: Mapping[str, str] = field(default_factory=dict)


class Response:
    """A relay answer whose body is read as it is consumed (``read``, ``iter_chunks``)."""

    def __init__(
        self, raw: http.client.HTTPResponse, conn: http.client.HTTPConnection, etag: Optional[str]
    ) -> None:
        self.status = raw.status
        self.headers: Dict[str, str] = {k.lower(): v for k, v in raw.getheaders()}
        if etag is None:
            self.headers.pop("etag", None)
        else:
            self.headers["etag"] = etag
        self._raw = raw
        self._conn = conn

    def read(self, amount: Optional[int] = None) -> bytes:
        return self._raw.read(amount)

    def iter_chunks(self, size: int = CHUNK) -> Iterator[bytes]:
        try:
            while True:
                chunk = self._raw.read(size)
                if not chunk:
                    return
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        self._raw.close()
        self._conn.close()

    def abort(self) -> None:
        """Cuts the connection from another thread: a read blocked on it returns at once."""
        sock = self._conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def segment(value: str) -> str:
    """Encodes one path segment (an id)."""
    if not isinstance(value, str) or value == "":
        raise TypeError("Airlock: an id must be a non-empty string")
    return quote(value, safe="")


class Transport:
    """Sends :class:`Call` objects to one relay."""

    def __init__(
        self,
        url: str,
        retries: int = 2,
        timeout: float = 300.0,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise TypeError(f"Airlock: url must be an http(s) URL: {url!r}")
        if not isinstance(retries, int) or retries < 0:
            raise TypeError("Airlock: retries must be a whole number >= 0")
        self.base_url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.retries = retries
        self.timeout = timeout
        self._ssl = ssl_context

    def send(self, call: Call) -> Response:
        """Sends ``call`` and returns its 2xx answer, unread; anything else raises."""
        url = self._url_of(call)
        what = f"{call.method} {call.path}"
        retryable = call.method == "GET" and call.body is None and call.json is None
        attempt = 0
        while True:
            try:
                response = self._get_following(url, call) if call.method == "GET" else self._once(
                    call.method, url, _headers(call), _body(call)
                )
            except (OSError, http.client.HTTPException) as error:
                if not retryable or attempt >= self.retries:
                    raise AirlockError(0, "network_error", f"{what}: request failed: {error}") from error
                time.sleep(_backoff(attempt))
                attempt += 1
                continue
            if 200 <= response.status < 300:
                return response
            status = response.status
            if retryable and attempt < self.retries and (status == 429 or status >= 500):
                delay = _retry_after(response.headers.get("retry-after"))
                response.close()
                time.sleep(_backoff(attempt) if delay is None else delay)
                attempt += 1
                continue
            try:
                body = response.read()
            except (OSError, http.client.HTTPException):
                body = b""
            finally:
                response.close()
            raise error_from_body(status, body, what)

    def json(self, call: Call) -> Any:
        """Sends ``call`` and parses its JSON answer."""
        with self.send(call) as response:
            text = response.read()
            status = response.status
        try:
            return json.loads(text)
        except ValueError:
            raise AirlockError(
                status, "invalid_response", f"{call.method} {call.path}: the answer is not JSON"
            ) from None

    def _once(
        self, method: str, url: str, headers: Dict[str, str], body: Optional[BodyData]
    ) -> Response:
        parts = urlsplit(url)
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(parts.netloc, timeout=self.timeout, context=self._ssl)
        else:
            conn = http.client.HTTPConnection(parts.netloc, timeout=self.timeout)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        try:
            conn.putrequest(method, target, skip_accept_encoding=True)
            for name, value in headers.items():
                conn.putheader(name, value)
            conn.endheaders()
            if body is not None:
                try:
                    _write_body(conn, body)
                except OSError as broken:
                    # The relay may refuse before reading the whole body (413 quota_exceeded):
                    # its answer, when it came, says more than the broken pipe.
                    try:
                        raw = conn.getresponse()
                    except (OSError, http.client.HTTPException):
                        raise broken from None
                    return Response(raw, conn, raw.getheader("etag"))
            raw = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        return Response(raw, conn, raw.getheader("etag"))

    def _get_following(self, url: str, call: Call) -> Response:
        """GETs ``url``, following redirects by hand: to another origin only ``Range`` goes
        along, never the bearer. The answer keeps the relay's ETag (or none)."""
        headers = _headers(call)
        current = url
        response = self._once("GET", current, headers, None)
        etag = response.headers.get("etag")
        hops = 0
        while hops < MAX_REDIRECTS and response.status in REDIRECTS and "location" in response.headers:
            following = urljoin(current, response.headers["location"])
            if urlsplit(following).scheme not in ("http", "https"):
                break
            response.close()
            if _origin(following) != _origin(current):
                headers = {k: v for k, v in headers.items() if k == "range"}
            current = following
            response = self._once("GET", current, headers, None)
            hops += 1
        if hops > 0 and not (response.status in REDIRECTS and "location" in response.headers):
            if etag is None:
                response.headers.pop("etag", None)
            else:
                response.headers["etag"] = etag
        return response

    def _url_of(self, call: Call) -> str:
        query = {k: v for k, v in call.query.items() if v is not None}
        return f"{self.base_url}{call.path}{'?' + urlencode(query) if query else ''}"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _headers(call: Call) -> Dict[str, str]:
    headers = {"accept": "application/json", **{k.lower(): v for k, v in call.headers.items()}}
    headers["authorization"] = f"Bearer {call.token}"
    if call.json is not None:
        headers["content-type"] = "application/json"
        headers["content-length"] = str(len(_json_bytes(call.json)))
    elif call.body is not None:
        headers["content-type"] = call.body.content_type
        headers["content-length"] = str(call.body.size)
    elif call.method != "GET":
        headers["content-length"] = "0"
    return headers


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def _body(call: Call) -> Optional[BodyData]:
    if call.json is not None:
        return _json_bytes(call.json)
    return call.body.data if call.body is not None else None


def _write_body(conn: http.client.HTTPConnection, body: BodyData) -> None:
    if isinstance(body, (bytes, bytearray, memoryview)):
        conn.send(bytes(body))
        return
    read = getattr(body, "read", None)
    if callable(read):
        read_bytes = cast(Callable[[int], bytes], read)
        while True:
            chunk = read_bytes(CHUNK)
            if not chunk:
                return
            conn.send(chunk)
    for chunk in body:  # type: ignore[union-attr]
        if chunk:
            conn.send(chunk)


def _backoff(attempt: int) -> float:
    """Full jitter over an exponential ceiling: 0.25 s, 0.5 s, 1 s, ... up to 5 s."""
    return random.random() * min(MAX_BACKOFF_S, 0.25 * 2**attempt)


def _retry_after(header: Optional[str]) -> Optional[float]:
    if not header:
        return None
    try:
        seconds = float(header)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(header).timestamp() - time.time()
        except (TypeError, ValueError, IndexError):
            return None
    return min(MAX_RETRY_AFTER_S, max(0.0, seconds))
