SENT_CACHE_MAX_ENTRIES = 1000


class SentCache(object):
    """The files this user sent before, by absolute path, with the size, mtime, ctime and inode
    they had and their SHA-256: the Node shim's sent-cache (agent-shim/src/upload/sent-cache.ts),
    in the same file (<cache>/airlock/sent.json) and format, so the two shims share it.

    A file whose stamp is unchanged is re-sent without being hashed: send asks the relay for a
    dedup hit on the recorded SHA-256 and is done. A stale entry can at worst make the file a
    dedup hit on content its owner scope sent and the relay verified; when the relay has no hit
    the entry is not trusted further and the file is sent as any other. A cache that cannot be
    read or written is simply empty."""

    def __init__(self):
        self.path = os.path.join(cache_dir(), "sent.json")
        self.entries = None

    def load(self):
        if self.entries is None:
            self.entries = {}
            try:
                with open(self.path, "rb") as handle:
                    saved = json.loads(handle.read().decode("utf-8"))
                if isinstance(saved, dict):
                    self.entries = saved
            except (OSError, ValueError):
                pass
        return self.entries

    def sha256_of(self, path, info):
        """The SHA-256 recorded for this file when its stamp is exactly the one recorded with it."""
        entry = self.load().get(os.path.abspath(path))
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            return None
        stamp = file_stamp(info)
        same = all(entry.get(k) == v for k, v in stamp.items())
        return entry["sha256"] if same else None

    def record(self, path, info, sha256):
        """Notes the file as sent and writes the cache at once (temp file, then rename)."""
        entries = self.load()
        key = os.path.abspath(path)
        entries.pop(key, None)
        entry = file_stamp(info)
        entry["sha256"] = sha256
        entries[key] = entry
        while len(entries) > SENT_CACHE_MAX_ENTRIES:
            entries.pop(next(iter(entries)))
        try:
            directory = os.path.dirname(self.path)
            os.makedirs(directory, 0o700, exist_ok=True)
            temp = temp_path(directory, ".sent-", ".json")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(to_json(entries).encode("utf-8"))
            os.rename(temp, self.path)
            TEMPS.discard(temp)
        except OSError:
            pass  # a hint only


def file_stamp(info):
    """What tells a file unchanged since it was sent, as Node's fs.Stats gives it (milliseconds)."""
    return {"size": info.st_size, "mtimeMs": mtime_ms(info), "ctimeMs": ns_to_ms(info.st_ctime_ns), "ino": info.st_ino}


def ns_to_ms(ns):
    value = (ns // 10 ** 9) * 1e3 + (ns % 10 ** 9) / 1e6
    return int(value) if value == int(value) else value
