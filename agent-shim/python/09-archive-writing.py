def archive_directory(path, level):
    """Packs a directory into <dir>.tar.gz in the temp directory, streaming; sorted, so the same
    tree always makes the same bytes. Returns (Stored, regular files in it)."""
    top = clean_name(os.path.basename(os.path.abspath(path)), "archive")
    temp = temp_path(tmpdir(), "airlock-", ".tar.gz")
    digests = Digests(None)
    count = [0]
    with new_temp_file(temp) as sink:
        z = zlib.compressobj(level, zlib.DEFLATED, 31)
        held = []

        def emit(data, force=False):
            held.append(data)
            if force or sum(len(x) for x in held) >= 64 * 1024:
                packed = z.compress(b"".join(held))
                del held[:]
                if packed:
                    digests.update(packed)
                    sink.write(packed)

        try:
            info = os.stat(path)
        except OSError as err:
            raise fs_error("read", path, err)
        emit(encode_header(top, "directory", info.st_mode, info.st_mtime))
        walk(path, top, emit, count)
        emit(b"\x00" * (2 * BLOCK), True)
        tail = z.flush()
        digests.update(tail)
        sink.write(tail)
    return Stored("identity", temp, digests.size, digests.hash.hexdigest(), None, True), count[0]


def walk(directory, prefix, emit, count):
    try:
        names = os.listdir(directory)
    except OSError as err:
        raise fs_error("read", directory, err)
    for name in sorted(names, key=lambda n: os.fsencode(n)):
        path = os.path.join(directory, name)
        entry = prefix + "/" + name
        try:
            info = os.lstat(path)
        except OSError as err:
            raise fs_error("read", path, err)
        mode, mtime = info.st_mode, int(info.st_mtime)
        if stat.S_ISDIR(mode):
            emit(encode_header(entry, "directory", mode, mtime))
            walk(path, entry, emit, count)
        elif stat.S_ISLNK(mode):
            try:
                target = os.readlink(path)
            except OSError as err:
                raise fs_error("read", path, err)
            emit(encode_header(entry, "symlink", mode, mtime, 0, target))
        elif stat.S_ISREG(mode):
            size = info.st_size
            emit(encode_header(entry, "file", mode, mtime, size))
            sent = 0
            for chunk in read_chunks(path, 0, size):
                sent += len(chunk)
                emit(chunk)
            if sent != size:
                raise changed_while_sending(path)
            emit(padding(size))
            count[0] += 1
        else:
            kind = "a socket" if stat.S_ISSOCK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else (
                "a device" if stat.S_ISBLK(mode) or stat.S_ISCHR(mode) else "a special file"
            )
            warn("skipped %s: %s cannot be archived" % (path, kind))


class TarFormatError(Exception):
    pass


class Refusal(CliError):
    def __init__(self, label, entry, reason):
        CliError.__init__(self, "refusing to extract %s: %s %s; nothing was extracted" % (label, quoted(entry), reason))


def quoted(name):
    shown = name[:200] + "\u2026" if len(name) > 200 else name
    text = json.dumps(shown, ensure_ascii=False)
    return re.sub(INVISIBLE, lambda m: written_out(m.group(0)), text)


def written_out(char):
    """`char` as `\\uXXXX`, or as its two UTF-16 halves outside the BMP (names.ts writtenOut)."""
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return "\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
    return "\\u%04x" % code


def archive_stem(name):
    match = re.match(r"^(.*)\.(?:tar\.gz|tgz)$", clean_name(name, ""), re.I | re.S)
    return match.group(1) if match and match.group(1) else None


class GunzipReader(object):
    """Reads a .tar.gz as a stream of tar bytes, in bounded memory (concatenated members too)."""

    def __init__(self, path, label):
        self.handle = open(path, "rb")
        self.z = zlib.decompressobj(31)
        self.fed = False
        self.tail = b""
        self.buffer = bytearray()
        self.ended = False

    def fill(self):
        while not self.buffer and not self.ended:
            if self.tail:
                data, self.tail = self.tail, b""
            else:
                data = self.handle.read(CHUNK)
                if not data:
                    if self.fed:
                        raise TarFormatError("unexpected end of file")
                    self.ended = True
                    return
            self.fed = True
            try:
                self.buffer += self.z.decompress(data, CHUNK)
            except zlib.error:
                raise TarFormatError("incorrect header check")
            self.tail = self.z.unconsumed_tail
            if self.z.eof:
                rest = self.z.unused_data + self.tail or self.handle.read(CHUNK)
                self.z = zlib.decompressobj(31)
                self.fed = False
                self.tail = b""
                # Another gzip member follows, or the stream ends (what follows is ignored).
                if rest[:2] == b"\x1f\x8b":
                    self.tail = rest
                else:
                    self.ended = True

    def read(self, n):
        if not self.buffer:
            self.fill()
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def take(self, n, end_ok):
        parts = []
        left = n
        while left > 0:
            data = self.read(min(left, CHUNK))
            if not data:
                if end_ok and left == n:
                    return None
                raise TarFormatError("the archive ends in the middle of an entry")
            parts.append(data)
            left -= len(data)
        return b"".join(parts)

    def close(self):
        self.handle.close()


def parse_number(block, offset, length, what):
    field = block[offset : offset + length]
    if field[0] & 0x80:
        if field[0] == 0xFF:
            raise TarFormatError("negative %s in a tar header" % what)
        value = field[0] & 0x7F
        for byte in field[1:]:
            value = value * 256 + byte
        if value > 2 ** 53 - 1:
            raise TarFormatError("%s too large in a tar header" % what)
        return value
    text = re.sub(r"[\x00 ].*$", "", field.decode("latin-1"), flags=re.S).strip()
    if text == "":
        return 0
    if not re.match(r"^[0-7]+$", text):
        raise TarFormatError("not a tar archive (bad %s field)" % what)
    return int(text, 8)


def c_string(data):
    end = data.find(b"\x00")
    return (data if end == -1 else data[:end]).decode("utf-8", "replace")


def parse_header(block):
    stored = parse_number(block, 148, 8, "checksum")
    total = sum(block[:148]) + 8 * 0x20 + sum(block[156:])
    if stored != total:
        raise TarFormatError("not a tar archive, or a damaged one (bad header)")
    flag = chr(block[156])
    prefix = c_string(block[345:500]) if block[257:262] == b"ustar" else ""
    base = c_string(block[0:100])
    kind = {"0": "file", "\x00": "file", "7": "file", "5": "directory", "2": "symlink", "1": "hardlink"}.get(flag, "other")
    return {
        "name": prefix + "/" + base if prefix else base,
        "type": kind,
        "flag": flag,
        "mode": parse_number(block, 100, 8, "mode"),
        "size": parse_number(block, 124, 12, "size"),
        "mtime": parse_number(block, 136, 12, "mtime"),
        "linkname": c_string(block[157:257]),
    }


def parse_pax(body):
    result = {}
    at = 0
    while at < len(body):
        space = body.find(b" ", at)
        if space == -1:
            break
        try:
            length = int(body[at:space].decode("latin-1"))
        except ValueError:
            length = 0
        if length <= 0 or at + length > len(body):
            raise TarFormatError("bad pax header in the archive")
        record = body[space + 1 : at + length - 1].decode("utf-8", "replace")
        key, eq, value = record.partition("=")
        if eq and key:
            result[key] = value
        at += length
    return result


