def status_error(res, text, refused, retryable=None):
    status = res.status
    body = error_body(text)
    if body.get("code"):
        detail = "%s: %s" % (body["code"], body["message"]) if body.get("message") else body["code"]
    else:
        detail = ("HTTP %d %s" % (status, http.client.responses.get(status, ""))).strip()
    ok = retryable(status, body.get("code")) if retryable else is_retryable_status(status)
    if ok:
        after = res.getheader("retry-after")
        try:
            delay = float(after) if after is not None else None
        except ValueError:
            delay = None
        return RetryableStatus(status, detail, delay if delay is not None and delay >= 0 else None)
    return RefusalError("%s: %s" % (refused, detail), status, detail, body)


FINAL_CODES = ("delivery_failed", "platform_unreachable", "platform_not_configured")


def relay_retryable(status, code):
    if code in FINAL_CODES:
        return False
    if code == "delivery_in_progress":
        return True
    return is_retryable_status(status)


def storage_retryable(status, code):
    return is_retryable_status(status) or code == "RequestTimeout"


class Relay(object):
    def __init__(self, policy):
        self.url, self.token = relay_config()
        self.policy = policy

    def call(self, method, path, action, payload=None, idempotency_key=None):
        headers = {"authorization": "Bearer " + self.token, "accept": "application/json"}
        if idempotency_key:
            headers["idempotency-key"] = idempotency_key
        body = None
        if method != "GET":
            body = b"" if payload is None else to_json(payload).encode("utf-8")
            if payload is not None:
                headers["content-type"] = "application/json"

        return self.exchange(method, self.url + path, headers, body, action)

    def exchange(self, method, url, headers, body, action):
        """One request to the relay, retried per the policy: its JSON answer."""

        def attempt():
            conn, res = open_request(method, url, headers, body)
            try:
                text = read_text(res, MAX_JSON_BYTES)
            finally:
                conn.close()
            if 200 <= res.status < 300:
                try:
                    return json.loads(text)
                except ValueError:
                    raise CliError("relay answered the %s with something other than JSON" % action)
            raise status_error(res, text, "relay refused " + action, relay_retryable)

        return with_retry(self.policy, ("relay", self.url, action), attempt)

    def single_upload(self, declaration, stored):
        """`POST /v1/single-uploads`: declares, stores, verifies and registers a small file in
        one request (the declaration in the query, the stored bytes as the body). Every attempt
        carries the same Idempotency-Key, so a retry after a lost answer gets the file the first
        attempt made. None when the relay has no such route (an older relay): the caller
        declares and PUTs instead."""
        fields = ("name", "size", "sha256", "contentType", "encoding", "storedSha256")
        pairs = [(k, str(declaration[k])) for k in fields]
        members = declaration.get("members")
        if members:
            pairs.append(("memberSpan", str(members["span"])))
            pairs.append(("memberSizes", ",".join(str(n) for n in members["storedSizes"])))
        query = urlencode(pairs, quote_via=quote)
        headers = {
            "authorization": "Bearer " + self.token,
            "accept": "application/json",
            "content-type": "application/octet-stream",
            "idempotency-key": str(uuid.uuid4()),
        }
        action = "upload of " + declaration["name"]
        try:
            record = self.exchange("POST", self.url + "/v1/single-uploads?" + query, headers, stored, action)
        except RefusalError as err:
            if err.status == 404 and err.body.get("code") == "not_found":
                return None
            raise
        if not isinstance(record, dict):
            raise CliError("relay gave an unexpected answer to the " + action)
        return record

    def declare(self, declaration):
        action = "upload of " + declaration["name"]
        answer = self.call("POST", "/v1/uploads", action, declaration)
        if not isinstance(answer, dict) or answer.get("status") not in ("deduped", "missing", "upload", "multipart"):
            raise CliError("relay gave an unexpected answer to the " + action)
        return answer

    def upload_state(self, upload_id, name):
        action = "lookup of the upload of " + name
        answer = self.call("GET", "/v1/uploads/" + quote(upload_id, safe=""), action)
        if not isinstance(answer, dict) or answer.get("status") not in ("upload", "multipart", "completed"):
            raise CliError("relay gave an unexpected answer to the " + action)
        return answer

    def complete(self, upload_id, name, body=None):
        return self.call("POST", "/v1/uploads/%s/complete" % quote(upload_id, safe=""), "completing the upload of " + name, body)

    def sign_parts(self, upload_id, name, parts):
        """Signed PUTs for `parts` ({partNumber, sha256, size?} each) of an upload declared
        without its hashes, in one request (POST /v1/uploads/:id/parts): {number: put}."""
        path = "/v1/uploads/%s/parts" % quote(upload_id, safe="")
        answer = self.call("POST", path, "upload of " + name, {"parts": parts})
        signed = answer.get("parts") if isinstance(answer, dict) else None
        puts = dict((p.get("partNumber"), p.get("put")) for p in signed or [] if isinstance(p, dict))
        if any(not isinstance(puts.get(p["partNumber"]), dict) for p in parts):
            raise CliError("relay gave an unexpected answer to the upload of " + name)
        return puts

    def get_file(self, file_id):
        return self.call("GET", "/v1/files/" + quote(file_id, safe=""), "lookup of file " + file_id)

    def content_url(self, file_id):
        return "%s/v1/files/%s/content" % (self.url, quote(file_id, safe=""))

    def auth(self):
        return {"authorization": "Bearer " + self.token}


# ---------------------------------------------------------------------------------------------
# Reading a file: type sniffing, gzip where it pays, hashes and part digests.


def _at(offset, sig):
    sig = sig.encode("latin-1") if isinstance(sig, str) else bytes(sig)
    return lambda s: s[offset : offset + len(sig)] == sig


def _mpeg(s):
    return len(s) >= 2 and s[0] == 0xFF and (s[1] & 0xE0) == 0xE0 and (s[1] & 0x06) != 0


def _id3(s):
    return s[:3] == b"ID3" and len(s) > 3 and 2 <= s[3] <= 4


FORMATS = [
    ("image/png", True, _at(0, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])),
    ("image/jpeg", True, _at(0, [0xFF, 0xD8, 0xFF])),
    ("image/gif", True, lambda s: s[:6] in (b"GIF87a", b"GIF89a")),
    ("image/webp", True, lambda s: s[:4] == b"RIFF" and s[8:12] == b"WEBP"),
    ("audio/wav", False, lambda s: s[:4] == b"RIFF" and s[8:12] == b"WAVE"),
    ("application/pdf", False, _at(0, "%PDF-")),
    ("application/zip", True, lambda s: s[:4] in (b"PK\x03\x04", b"PK\x05\x06")),
    ("application/gzip", True, _at(0, [0x1F, 0x8B])),
    ("video/quicktime", True, lambda s: s[4:8] == b"ftyp" and s[8:12] == b"qt  "),
    ("video/mp4", True, _at(4, "ftyp")),
    ("video/webm", True, lambda s: s[:4] == b"\x1a\x45\xdf\xa3" and b"webm" in s[:64]),
    ("video/x-matroska", True, _at(0, [0x1A, 0x45, 0xDF, 0xA3])),
    ("audio/ogg", True, _at(0, "OggS")),
    ("audio/flac", True, _at(0, "fLaC")),
    ("audio/mpeg", True, lambda s: _id3(s) or _mpeg(s)),
    ("application/zstd", True, _at(0, [0x28, 0xB5, 0x2F, 0xFD])),
    ("application/x-xz", True, _at(0, [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00])),
    ("application/x-bzip2", True, lambda s: s[:3] == b"BZh" and len(s) > 3 and 0x31 <= s[3] <= 0x39),
    ("application/x-7z-compressed", True, _at(0, [0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C])),
]


def sniff(sample, truncated):
    for kind, compressed, matches in FORMATS:
        if matches(sample):
            return kind, compressed
    if b"\x00" not in sample:
        try:
            import codecs

            codecs.getincrementaldecoder("utf-8")("strict").decode(sample, final=not truncated)
            return "text/plain; charset=utf-8", False
        except UnicodeDecodeError:
            pass
    return "application/octet-stream", False


def mtime_ms(info):
    return ns_to_ms(info.st_mtime_ns)


def max_stored_size(size):
    return size + -(-size // 1000) + 1024


def part_size_for(size):
    return max(MIN_PART_BYTES, -(-max_stored_size(size) // MAX_PARTS // MiB) * MiB)


def part_count(stored_size, part_size):
    return max(1, -(-stored_size // part_size))


def part_span(stored_size, part_size, number):
    """Where part `number` starts and how long it is (the last one is shorter)."""
    start = (number - 1) * part_size
    return start, min(part_size, stored_size - start)


def upload_key(relay, path, size, mtime):
    """What a saved upload is of (UploadStates): this file, as it is now, to this relay."""
    return {"relayUrl": relay.url, "path": os.path.abspath(path), "size": size, "mtimeMs": mtime}


def multipart_threshold():
    """Stored bytes above which a send goes up in parts: AIRLOCK_MULTIPART_THRESHOLD, at least
    one smallest part, else 64 MiB (as the Node shim)."""
    raw = os.environ.get("AIRLOCK_MULTIPART_THRESHOLD", "").strip()
    return max(MIN_PART_BYTES, int(raw)) if raw.isdigit() else MULTIPART_THRESHOLD_BYTES


def digest_part_size(size, may_grow):
    largest = max_stored_size(size) if may_grow else size
    return part_size_for(size) if largest > multipart_threshold() else None


class Digests(object):
    """SHA-256 and size of a byte stream, and optionally the SHA-256 of each part of it."""

    def __init__(self, part_size=None, whole=True):
        self.hash = hashlib.sha256() if whole else None
        self.size = 0
        self.part_size = part_size
        self.parts = []
        self.part = hashlib.sha256() if part_size else None
        self.filled = 0

    def update(self, chunk):
        if self.hash is not None:
            self.hash.update(chunk)
        self.size += len(chunk)
        if not self.part_size:
            return
        view = memoryview(chunk)
        while len(view):
            take = min(self.part_size - self.filled, len(view))
            self.part.update(view[:take])
            self.filled += take
            view = view[take:]
            if self.filled == self.part_size:
                self._cut()

    def _cut(self):
        self.parts.append(self.part.hexdigest())
        self.part = hashlib.sha256()
        self.filled = 0

    def finish_parts(self):
        if self.part_size is None:
            return None
        if self.filled > 0 or not self.parts:
            self._cut()
        return self.parts


def file_part_digests(path, part_size, abandon):
    """The SHA-256 of each part of a file, in a pass of its own: run in a thread beside the
    whole-file hash (hashlib lets go of the GIL), the two cost one hash's time on two cores."""
    digests = Digests(part_size, whole=False)
    for chunk in read_chunks(path):
        if abandon.is_set():
            raise CliError("abandoned")
        digests.update(chunk)
    return digests.finish_parts()


