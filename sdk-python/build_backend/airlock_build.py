"""A PEP 517 build backend in the standard library alone, so that ``pip install ./sdk-python``
works offline on any Python >= 3.9 with nothing else installed (no setuptools, no wheel), and
``python -m build`` makes the same wheel and sdist for publishing. It packs ``src/airlock_sdk``
as it is (pure Python) with the metadata from ``pyproject.toml``'s ``[project]`` table."""
from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "airlock_sdk"
SDIST_PARTS = ["pyproject.toml", "README.md", "build_backend", "src", "tests"]


def _project() -> Dict[str, str]:
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as handle:
        text = handle.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = dict(re.findall(r'^([a-z-]+)\s*=\s*"([^"]*)"', table, re.MULTILINE))
    return {key: fields[key] for key in ("name", "version", "description", "requires-python")}


def _dist_name() -> str:
    project = _project()
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _metadata() -> str:
    project = _project()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {project['name']}\n"
        f"Version: {project['version']}\n"
        f"Summary: {project['description']}\n"
        f"Requires-Python: {project['requires-python']}\n"
        "License: MIT\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Typing :: Typed\n"
        "Description-Content-Type: text/markdown\n\n" + readme
    )


WHEEL = "Wheel-Version: 1.0\nGenerator: airlock_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files() -> List[Tuple[str, str]]:
    base = os.path.join(ROOT, "src")
    found = []
    for folder, dirs, names in os.walk(os.path.join(base, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".py", ".typed")):
                path = os.path.join(folder, name)
                found.append((path, os.path.relpath(path, base).replace(os.sep, "/")))
    return found


def _write_wheel(directory: str, entries: List[Tuple[str, bytes]]) -> str:
    dist_info = f"{_dist_name()}.dist-info"
    entries = entries + [
        (f"{dist_info}/METADATA", _metadata().encode()),
        (f"{dist_info}/WHEEL", WHEEL.encode()),
        (f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode()),
    ]
    record = []
    for arcname, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arcname},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    name = f"{_dist_name()}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for arcname, data in [*entries, (f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode())]:
            info = zipfile.ZipInfo(arcname, (2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            wheel.writestr(info, data)
    return name


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


get_requires_for_build_sdist = get_requires_for_build_wheel
get_requires_for_build_editable = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict] = None) -> str:
    dist_info = f"{_dist_name()}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for name, text in (("METADATA", _metadata()), ("WHEEL", WHEEL)):
        with open(os.path.join(metadata_directory, dist_info, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    return dist_info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None, metadata_directory: Optional[str] = None) -> str:
    entries = []
    for path, arcname in _package_files():
        with open(path, "rb") as handle:
            entries.append((arcname, handle.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None, metadata_directory: Optional[str] = None) -> str:
    """PEP 660: a wheel holding one .pth file that puts ``src`` on ``sys.path``."""
    return _write_wheel(wheel_directory, [(f"{PACKAGE}.pth", (os.path.join(ROOT, "src") + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    name = _dist_name()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for part in SDIST_PARTS:
            path = os.path.join(ROOT, part)
            if os.path.exists(path):
                archive.add(path, f"{name}/{part}", filter=_clean)
        info = tarfile.TarInfo(f"{name}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    with open(os.path.join(sdist_directory, f"{name}.tar.gz"), "wb") as handle:
        handle.write(buffer.getvalue())
    return f"{name}.tar.gz"


def _clean(info: tarfile.TarInfo) -> Optional[tarfile.TarInfo]:
    if "__pycache__" in info.name:
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info
