def next_entry(reader):
    overrides = {}
    meta = 0
    while True:
        block = reader.take(BLOCK, True)
        if block is None or not block.strip(b"\x00"):
            return None
        header = parse_header(block)
        if header["flag"] in ("x", "g", "L", "K"):
            meta += header["size"]
            if meta > MAX_META_BYTES:
                raise TarFormatError("pax or GNU long-name headers over 1 MiB for one entry")
            body = reader.take(header["size"], False) or b""
            reader.take(len(padding(header["size"])), False)
            if header["flag"] == "x":
                overrides.update(parse_pax(body))
            elif header["flag"] == "L":
                overrides["path"] = c_string(body)
            elif header["flag"] == "K":
                overrides["linkpath"] = c_string(body)
            continue
        if "path" in overrides:
            header["name"] = overrides["path"]
        if "linkpath" in overrides:
            header["linkname"] = overrides["linkpath"]
        if "size" in overrides:
            if not re.match(r"^\d+$", overrides["size"]):
                raise TarFormatError("bad size in a pax header")
            header["size"] = int(overrides["size"])
        if "mtime" in overrides:
            try:
                header["mtime"] = int(float(overrides["mtime"]) // 1)
            except ValueError:
                pass
        if header["type"] in ("symlink", "hardlink"):
            header["size"] = 0
        return header


def skip(reader, size):
    left = size + len(padding(size))
    while left > 0:
        data = reader.read(min(left, CHUNK))
        if not data:
            raise TarFormatError("the archive ends in the middle of an entry")
        left -= len(data)


def relative_name(name, refuse):
    if name.startswith("/"):
        raise refuse("is an absolute path")
    if "\x00" in name:
        raise refuse("has a NUL in its name")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise refuse("has a .. component")
    for part in parts:
        problem = name_problem(part)
        if problem is not None:
            raise refuse("is not a clean name: each part " + problem)
    return "/".join(parts)


def check_link_target(target, refuse):
    for part in target.split("/"):
        if part in ("", ".", ".."):
            continue
        problem = name_problem(part)
        if problem is not None:
            raise refuse("links to a target that is not clean: each part " + problem)


def directory_mode(mode, umask):
    """Permission bits only, clamped to the user's umask, always rwx for the owner."""
    return (mode & 0o777 & ~umask) | 0o700


def user_umask():
    """The process's umask: from /proc where it shows it, else read by setting it and setting it
    back at once (nothing else runs meanwhile: extraction is single-threaded)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def inside(root, path):
    return path == root or path.startswith(root + os.sep)


def resolve_inside(root, start, target, depth):
    if depth > 40 or target.startswith("/"):
        return None
    current = start
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            if not inside(root, current):
                return None
            continue
        following = os.path.join(current, part)
        if os.path.islink(following):
            current = resolve_inside(root, current, os.readlink(following), depth + 1)
            if current is None:
                return None
        else:
            current = following
    return current


def unpack(archive, label, work, limits):
    """Extracts every entry into `work`, checking each as it comes: within `limits` (bytes of
    file content, entries), an entry over either refused before anything of it is written;
    modes clamped to the user's umask."""
    max_bytes, max_entries = limits
    umask = user_umask()
    entries = 0
    kinds = {}
    dirs = {}
    links = []
    files = 0
    total = 0
    reader = GunzipReader(archive, label)
    try:
        while True:
            entry = next_entry(reader)
            if entry is None:
                break
            refuse = (lambda e: lambda reason: Refusal(label, e["name"], reason))(entry)
            rel = relative_name(entry["name"], refuse)
            if entry["type"] == "other":
                warn(
                    "skipped %s in %s: entries of type %s are not extracted"
                    % (quoted(entry["name"]), label, quoted(entry["flag"]))
                )
                skip(reader, entry["size"])
                continue
            if rel == "":
                skip(reader, entry["size"])
                continue
            entries += 1
            if entries > max_entries:
                raise refuse("takes the archive over %d entries (raise it with --max-entries)" % max_entries)
            parts = rel.split("/")
            for i in range(1, len(parts)):
                parent = "/".join(parts[:i])
                kind = kinds.get(parent)
                if kind == "symlink":
                    raise refuse("goes through the symbolic link " + parent)
                if kind is not None and kind != "directory":
                    raise refuse("goes through the file " + parent)
                if kind is None:
                    kinds[parent] = "directory"
                    dirs[parent] = (0o755, None)
            existing = kinds.get(rel)
            if existing is not None and not (existing == "directory" and entry["type"] == "directory"):
                raise refuse("appears twice in the archive")
            kinds[rel] = entry["type"]
            path = os.path.join(work, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if entry["type"] == "directory":
                os.makedirs(path, exist_ok=True)
                dirs[rel] = (directory_mode(entry["mode"], umask), entry["mtime"])
                skip(reader, entry["size"])
                continue
            if entry["type"] == "symlink":
                target = entry["linkname"]
                check_link_target(target, refuse)
                if target == "" or target.startswith("/"):
                    raise refuse("links to an absolute path (%s)" % target)
                if not inside(work, os.path.normpath(os.path.join(os.path.dirname(path), target))):
                    raise refuse("links outside the archive (%s)" % target)
                links.append((rel, target, entry["mtime"]))
                continue
            if entry["type"] == "hardlink":
                target_rel = relative_name(
                    entry["linkname"], lambda reason: refuse("is a hard link whose target " + reason)
                )
                if kinds.get(target_rel) != "file":
                    raise refuse("is a hard link to %s, not a regular file earlier in the archive" % target_rel)
                os.link(os.path.join(work, target_rel), path)
                files += 1
                continue
            total += entry["size"]
            if total > max_bytes:
                raise refuse("takes the archive over %d bytes extracted (raise it with --max-bytes)" % max_bytes)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as sink:
                left = entry["size"]
                while left > 0:
                    data = reader.read(min(left, CHUNK))
                    if not data:
                        raise TarFormatError("the archive ends in the middle of an entry")
                    sink.write(data)
                    left -= len(data)
            reader.take(len(padding(entry["size"])), False)
            os.chmod(path, entry["mode"] & 0o777 & ~umask)
            os.utime(path, (entry["mtime"], entry["mtime"]))
            files += 1
    except CliError:
        raise
    except TarFormatError as err:
        raise CliError("cannot extract %s: %s" % (label, err))
    except OSError as err:
        raise fs_error("extract", label, err)
    finally:
        reader.close()
    for rel, target, mtime in links:
        path = os.path.join(work, rel)
        os.symlink(target, path)
        try:
            os.utime(path, (mtime, mtime), follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass
    return files, dirs, [(rel, target) for rel, target, _ in links]


def extract_archive(archive, label, directory, stem, numbered, limits):
    """Extracts into a new directory `stem` in `directory` (numbered when taken, if allowed), by
    way of a temp dir renamed into place once everything is there: a refusal leaves nothing."""
    directory = os.path.abspath(directory)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise fs_error("create directory", directory, err)
    if not numbered and os.path.lexists(os.path.join(directory, stem)):
        raise CliError("%s already exists; extract elsewhere with -o <dir>" % os.path.join(directory, stem))
    work = temp_path(directory, ".airlock-", ".extract")
    try:
        try:
            os.mkdir(work, 0o700)
        except OSError as err:
            raise fs_error("create directory", work, err)
        files, dirs, links = unpack(archive, label, work, limits)
        tops = os.listdir(work)
        single = len(tops) == 1 and tops[0] in dirs
        content = os.path.join(work, tops[0]) if single else work
        root_meta = dirs[tops[0]] if single else (0o755, None)
        for rel, target in links:
            if resolve_inside(content, os.path.dirname(os.path.join(work, rel)), target, 0) is None:
                raise Refusal(label, rel, "links outside the archive (%s)" % target)
        for rel, meta in sorted(dirs.items(), key=lambda item: -len(item[0].split("/"))):
            if single and rel == tops[0]:
                continue
            os.chmod(os.path.join(work, rel), meta[0])
            if meta[1] is not None:
                os.utime(os.path.join(work, rel), (meta[1], meta[1]))
        path = claim_dir(content, directory, stem, numbered)
        os.chmod(path, directory_mode(root_meta[0], user_umask()))
        if root_meta[1] is not None:
            os.utime(path, (root_meta[1], root_meta[1]))
        return path, files
    except OSError as err:
        raise fs_error("extract", label, err)
    finally:
        release(work)


