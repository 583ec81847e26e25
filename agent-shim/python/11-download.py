def claim_dir(content, directory, name, numbered):
    for n in range(0, 10001 if numbered else 1):
        path = os.path.join(directory, numbered_name(name, n))
        try:
            os.mkdir(path)
        except FileExistsError:
            if not numbered:
                raise CliError("%s already exists; extract elsewhere with -o <dir>" % path)
            continue
        except OSError as err:
            raise fs_error("create directory", path, err)
        try:
            os.rename(content, path)
            return path
        except OSError as err:
            try:
                os.rmdir(path)
            except OSError:
                pass
            raise fs_error("write", path, err)
    raise CliError("cannot extract %s in %s: too many directories by that name" % (name, directory))


# ---------------------------------------------------------------------------------------------
# Downloads: streamed to a temp file next to the destination, verified, then named.


def disposition_name(header):
    if not header:
        return None
    extended = re.search(r"filename\*\s*=\s*([^']*)'[^']*'([^;]+)", header, re.I)
    if extended and extended.group(1).strip().lower() == "utf-8":
        try:
            return unquote(extended.group(2).strip(), errors="strict")
        except UnicodeDecodeError:
            pass
    plain = re.search(r'filename\s*=\s*"((?:[^"\\]|\\.)*)"', header, re.I)
    if plain:
        return re.sub(r"\\(.)", r"\1", plain.group(1))
    bare = re.search(r"filename\s*=\s*([^;\s]+)", header, re.I)
    return bare.group(1) if bare else None


def etag_sha256(res, etag=None):
    header = etag if etag is not None else res.getheader("etag")
    match = re.match(r'^(?:W/)?"([0-9a-fA-F]{64})"$', header or "")
    return match.group(1).lower() if match else None


REDIRECTS = (301, 302, 303, 307, 308)


def open_following(url, headers):
    """A GET that follows up to 3 redirects (an s3 relay sends downloads to a short-lived
    presigned URL), http(s) only; to another origin only Range goes along, never the
    token. Returns (conn, res, etag): the relay's own ETag when it redirected (the store's
    is not a SHA-256), else None."""
    relay_etag = None
    for hop in range(4):
        conn, res = open_request("GET", url, headers)
        location = res.getheader("location")
        if res.status not in REDIRECTS or not location or hop == 3:
            return conn, res, relay_etag
        if hop == 0:
            relay_etag = res.getheader("etag") or ""
        conn.close()
        target = urljoin(url, location)
        if urlsplit(target).scheme not in ("http", "https"):
            raise CliError("refusing a redirect to %s" % urlsplit(target).scheme)
        if url_origin(target) != url_origin(url):
            headers = dict((k, v) for k, v in headers.items() if k.lower() == "range")
        url = target


def url_origin(url):
    parts = urlsplit(url)
    return (parts.scheme.lower(), parts.netloc.lower())


def keep_temp(temp, directory, name, numbered):
    """Gives a finished temp file its name without ever replacing a file."""
    for n in range(0, 10001 if numbered else 1):
        path = os.path.normpath(os.path.join(directory, numbered_name(name, n)))
        try:
            try:
                os.link(temp, path)
            except OSError as err:
                if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV):
                    raise
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                os.rename(temp, path)
            release(temp)
            return path
        except FileExistsError:
            if not numbered:
                raise CliError("%s already exists; name it with -o to overwrite it" % path)
        except OSError as err:
            raise fs_error("write", path, err)
    raise CliError("cannot write %s in %s: too many files by that name" % (name, directory))


def download(url, headers, target, name, sha256, output, policy, size=None):
    """output: ("stdout",) | ("path", path) | ("dir", dir, numbered). Returns (path, name, size).
    `size`, when known beforehand, spares a small file the HEAD a ranged download starts with."""
    known = sha256.lower() if sha256 else None
    if output[0] != "stdout":
        ranged = maybe_ranged(url, headers, target, name, known, output, policy, size)
        if ranged is not None:
            return ranged

    def attempt():
        conn, res, relay_etag = open_following(url, headers)
        try:
            if res.status != 200:
                raise status_error(res, read_text(res), "%s refused %s" % (target[0], target[2]))
            etag = etag_sha256(res, relay_etag)
            if etag and known and etag != known:
                raise CliError("the %s is corrupt: its ETag does not match the expected SHA-256" % target[2])
            expected = etag or known
            if not expected:
                raise CliError("%s sent no ETag to verify the %s against" % (target[0], target[2]))
            what = "the ETag" if etag else "the expected SHA-256"
            corrupt = CliError("the %s is corrupt: its SHA-256 does not match %s" % (target[2], what))
            got = name or disposition_name(res.getheader("content-disposition")) or "download"
            length = res.getheader("content-length")
            length = int(length) if length and length.isdigit() else None
            if output[0] == "stdout":
                return receive_stdout(res, expected, corrupt, length, got)
            directory = output[1] if output[0] == "dir" else os.path.dirname(os.path.abspath(output[1]))
            if output[0] == "dir" and not output[2]:
                refuse_existing(os.path.normpath(os.path.join(directory, clean_name(got, "file"))))
            temp = temp_path(directory, ".airlock-", ".part")
            try:
                size = receive_file(res, temp, expected, corrupt, length)
                if output[0] == "path":
                    os.rename(temp, output[1])
                    TEMPS.discard(temp)
                    return output[1], got, size
                return keep_temp(temp, directory, clean_name(got, "file"), output[2]), got, size
            except OSError as err:
                raise fs_error("write", output[1] if output[0] == "path" else os.path.join(directory, got), err)
            finally:
                release(temp)
        finally:
            conn.close()

    return with_retry(policy, target, attempt)


def refuse_existing(path):
    if os.path.lexists(path):
        raise CliError("%s already exists; name it with -o to overwrite it" % path)


def receive_file(res, temp, expected, corrupt, length):
    digest = hashlib.sha256()
    size = 0
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as sink:
        while True:
            try:
                chunk = res.read(CHUNK)
            except (OSError, http.client.HTTPException) as err:
                raise network_error(err)
            if not chunk:
                break
            size += len(chunk)
            if length is not None and size > length:
                raise corrupt
            digest.update(chunk)
            sink.write(chunk)
    if (length is not None and size != length) or digest.hexdigest() != expected:
        if length is not None and size < length:
            raise NetworkError("socket hang up", True)
        raise corrupt
    return size


def receive_stdout(res, expected, corrupt, length, name):
    digest = hashlib.sha256()
    size = 0
    while True:
        try:
            chunk = res.read(CHUNK)
        except (OSError, http.client.HTTPException) as err:
            if size == 0:
                raise network_error(err)
            raise CliError("connection lost while writing %s to stdout: %s" % (name, network_error(err).reason))
        if not chunk:
            break
        size += len(chunk)
        digest.update(chunk)
        sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()
    if (length is not None and size != length) or digest.hexdigest() != expected:
        raise corrupt
    return "-", name, size


# ---------------------------------------------------------------------------------------------
# get, pull, ls


def cmd_get(args):
    spec = {
        "output": (True, "o", False),
        "extract": (False, None, False),
        "max-bytes": (True, None, False),
        "max-entries": (True, None, False),
        "help": (False, "h", False),
    }
    values, positionals = parse_args(args, spec, USAGE["get"])
    if values.get("help"):
        return out(command_help("get"))
    if len(positionals) != 1:
        raise UsageError("get takes exactly one file id or share URL; usage: " + USAGE["get"])
    ref = positionals[0]
    option = values.get("output")
    if values.get("extract") and option == "-":
        raise UsageError("--extract needs a directory, not stdout; usage: " + USAGE["get"])
    check_extract_flags(values, USAGE["get"])
    limits = extract_limits(values, USAGE["get"])
    policy = Policy()
    size = None
    if re.match(r"^https?://", ref, re.I):
        source = share_source(ref)
    else:
        relay = Relay(policy)
        record = relay.get_file(ref)
        action = "download of " + clean_name(record.get("name") or "", "the file")
        source = (relay.content_url(ref), relay.auth(), ("relay", relay.url, action), record.get("name"), record.get("sha256"))
        size = record.get("size")
    url, headers, target, name, sha256 = source
    if values.get("extract"):
        return out(get_extracted(source, option or ".", policy, limits, size))
    if option == "-":
        path, got, _ = download(url, headers, target, name, sha256, ("stdout",), policy)
        note("wrote %s to stdout" % clean_name(got, "the file"))
        return 0
    if option is None or os.path.isdir(option):
        output = ("dir", option or ".", False)
    else:
        output = ("path", option)
    path, _, _ = download(url, headers, target, name, sha256, output, policy, size)
    out(path)
    return 0


def share_source(link):
    parts = urlsplit(link)
    if not parts.netloc:
        raise UsageError("not a valid share URL: " + link)
    if not re.search(r"/d/[^/]+$", parts.path):
        raise UsageError("not a share URL (expected \u2026/d/<token>): " + link)
    origin = "%s://%s" % (parts.scheme.lower(), parts.netloc)
    return (link, {}, ("relay", origin, "download of the shared file"), None, None)


def not_an_archive(name):
    return CliError("%s is not a .tar.gz archive; get it without --extract" % clean_name(name, "the file"))


