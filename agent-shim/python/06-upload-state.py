# The name of the file whose saved multipart upload is going up now: a Ctrl-C says how to resume it.
RESUMABLE = []


class UploadStates(object):
    """Multipart uploads in progress, one small JSON file each in <cache>/airlock/uploads/.
    `name`, where given, is what a Ctrl-C names while the upload is saved (RESUMABLE)."""

    def __init__(self):
        self.dir = os.path.join(cache_dir(), "uploads")

    def file_for(self, key):
        ident = to_json([key["relayUrl"], key["path"], key["size"], key["mtimeMs"]])
        return os.path.join(self.dir, hashlib.sha256(ident.encode("utf-8")).hexdigest()[:32] + ".json")

    def load(self, key, name=None):
        try:
            with open(self.file_for(key), "rb") as handle:
                saved = json.loads(handle.read(1024 * 1024).decode("utf-8"))
            created = parse_iso(saved.get("createdAt"))
        except (OSError, ValueError, AttributeError):
            return None
        age = time.time() * 1000 - created if created is not None else -1
        same = all(saved.get(k) == key[k] for k in ("relayUrl", "path", "size", "mtimeMs"))
        if same and isinstance(saved.get("uploadId"), str) and 0 <= age < STATE_MAX_AGE_MS:
            if name is not None:
                RESUMABLE[:] = [name]
            return saved
        self.remove(key)
        return None

    def save(self, upload, name=None):
        try:
            os.makedirs(self.dir, 0o700, exist_ok=True)
            temp = temp_path(self.dir, ".state-", ".json")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(to_json(upload).encode("utf-8"))
            os.rename(temp, self.file_for(upload))
            TEMPS.discard(temp)
        except OSError:
            return
        if name is not None:
            RESUMABLE[:] = [name]

    def remove(self, key):
        del RESUMABLE[:]
        try:
            os.unlink(self.file_for(key))
        except OSError:
            pass


def parse_iso(text):
    import calendar

    match = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z$", str(text))
    if not match:
        return None
    fields = [int(x) for x in match.groups()[:6]]
    frac = float("0." + match.group(7)) if match.group(7) else 0.0
    return (calendar.timegm(tuple(fields) + (0, 0, 0)) + frac) * 1000


def now_iso():
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % int(now % 1 * 1000)


class Sender(object):
    """How every file of one `send` goes up."""

    def __init__(self, relay, policy):
        self.relay = relay
        self.policy = policy
        self.concurrency = integer_var("AIRLOCK_UPLOAD_CONCURRENCY", DEFAULT_UPLOAD_CONCURRENCY, 1, 16)
        # Unset: parts paced by how fast the first go (PartPace); set: that many from the start.
        self.adaptive = not os.environ.get("AIRLOCK_UPLOAD_CONCURRENCY", "").strip()
        self.level = integer_var("AIRLOCK_GZIP_LEVEL", GZIP_LEVEL, 1, 9)
        self.states = UploadStates()
        self.sent = SentCache()

    def send_in_one_request(self, declaration, data):
        """Bytes held in memory, in one request: the send's result, or None when the relay has
        no one-request route. A dedup hit within the owner scope leaves the body unread."""
        record = self.relay.single_upload(declaration, data)
        if record is None:
            return None
        deduped = bool(record.get("deduped"))
        return result_of(record, deduped, 0 if deduped else declaration["storedSize"])

    def send_stored(self, declaration, stored, source):
        """Declares the stored form, stores the bytes and completes: (file, deduped, uploaded)."""
        if stored.members and declaration.get("encoding") == "gzip":
            declaration = dict(declaration, members=stored.members)
        if declaration["storedSize"] > multipart_threshold():
            return self.send_in_parts(declaration, stored, source)
        answer = self.relay.declare(declaration)
        if answer["status"] == "deduped":
            return answer["file"], True, 0
        return self.send_whole(declaration, stored, answer)

    def send_whole(self, declaration, stored, answer):
        name = declaration["name"]
        if answer["status"] == "missing":
            raise CliError("relay asked again how %s is stored" % name)
        if answer["status"] != "upload":
            raise CliError("relay gave an unexpected answer to the upload of " + name)
        put_slice(answer["put"], stored.path, 0, stored.size, stored.sha256, name, name, self.policy)
        return self.relay.complete(answer["uploadId"], name), False, stored.size

    def send_in_parts(self, declaration, stored, source):
        name, size, stored_size = declaration["name"], declaration["size"], declaration["storedSize"]
        part_size = part_size_for(size)
        digests = stored.parts
        if digests is None or len(digests) != part_count(stored_size, part_size):
            parts = Digests(part_size)
            for chunk in read_chunks(stored.path):
                parts.update(chunk)
            digests = parts.finish_parts()
        # Standard input (no source) cannot be read again by a later run: its upload is not saved.
        key = None
        if source is not None:
            key = upload_key(self.relay, source[0], size, source[1])
        form = dict((k, declaration[k]) for k in ("sha256", "encoding", "storedSize", "storedSha256"))
        upload = self.resumable(key, form, part_size, name) if key is not None else None
        if upload is not None and upload["status"] == "completed":
            self.states.remove(key)
            return upload["file"], False, 0
        if upload is None:
            asked = dict(declaration)
            asked["partSha256"] = digests
            answer = self.relay.declare(asked)
            if answer["status"] == "deduped":
                return answer["file"], True, 0
            if answer["status"] != "multipart":
                return self.send_whole(declaration, stored, answer)
            upload = answer
            if key is not None:
                saved = dict(key)
                saved.update(form)
                saved.update({"partSize": part_size, "uploadId": upload["uploadId"], "createdAt": now_iso()})
                self.states.save(saved, name)
        upload_id = upload["uploadId"]
        uploaded = self.put_parts(upload, stored, part_size, digests, name)
        try:
            record = self.relay.complete(upload_id, name)
        except RefusalError as err:
            if err.body.get("code") != "upload_incomplete":
                raise
            now = self.relay.upload_state(upload_id, name)
            if now["status"] == "completed":
                record = now["file"]
            elif now["status"] == "multipart":
                uploaded += self.put_parts(now, stored, part_size, digests, name)
                record = self.relay.complete(upload_id, name)
            else:
                raise
        if key is not None:
            self.states.remove(key)
        return record, False, uploaded

    def resumable(self, key, form, part_size, name):
        saved = self.states.load(key, name)
        if saved is None:
            return None
        same = all(saved.get(k) == v for k, v in form.items()) and saved.get("partSize") == part_size
        if same:
            try:
                state = self.relay.upload_state(saved["uploadId"], name)
                if state["status"] == "completed":
                    return state
                if state["status"] == "multipart" and state.get("uploadId") == saved["uploadId"]:
                    return state
            except RefusalError:
                pass
        self.states.remove(key)
        return None

    def put_parts(self, upload, stored, part_size, digests, label):
        count = len(digests)
        mismatch = CliError("relay planned the parts of %s differently than airlock did" % label)
        if upload.get("partSize") != part_size or upload.get("partCount") != count:
            raise mismatch
        seen = set()
        for part in upload.get("parts") or []:
            number = part.get("partNumber")
            valid = isinstance(number, int) and 1 <= number <= count
            if not valid or number in seen or not isinstance((part.get("put") or {}).get("url"), str):
                raise mismatch
            seen.add(number)
        missing = sorted(upload.get("parts") or [], key=lambda p: p["partNumber"])

        def one(part, stream):
            number = part["partNumber"]
            start, length = part_span(stored.size, part_size, number)
            which = "%s (part %d of %d)" % (label, number, count)
            digest = digests[number - 1]
            put_slice(part["put"], stored.path, start, length, digest, label, which, self.policy, stop, stream)
            return length

        stop = threading.Event()
        remaining = sum(part_span(stored.size, part_size, part["partNumber"])[1] for part in missing)
        return each_part(self.concurrency, missing, one, stop, self.adaptive, remaining)


# ---------------------------------------------------------------------------------------------
# send


DESTINATION = re.compile(r"^(telegram:-?\d+|discord:\d+|slack:[A-Z0-9]+|whatsapp:\d+)$")
DESTINATION_SHAPES = "telegram:<chatId>, discord:<channelId>, slack:<channelId> or whatsapp:<wa_id>"


