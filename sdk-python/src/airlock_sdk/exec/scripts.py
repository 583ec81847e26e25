"""The POSIX ``sh`` scripts the exec transport runs inside the sandbox: the same scripts, exit
codes and messages as the TypeScript SDK's (``sdk/src/exec/sandbox-scripts.ts``). They take
paths and hashes as positional arguments and the bytes on stdin; file bytes never appear in a
script or its arguments, except in the base64 fallback for an exec API without stdin."""
from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Tuple

PROBED_TOOLS = ("sha256sum", "openssl", "python3", "node", "gzip", "base64")

PROBE_SCRIPT = (
    "for t in " + " ".join(PROBED_TOOLS) + "; do "
    'command -v "$t" >/dev/null 2>&1 && printf "%s\\n" "$t"; done; exit 0'
)

_HASHERS: List[Tuple[str, str]] = [
    ("openssl", "openssl dgst -sha256 -r"),
    ("sha256sum", "sha256sum"),
    (
        "python3",
        "python3 -c 'import hashlib,sys\n"
        "h=hashlib.sha256()\n"
        'for b in iter(lambda: sys.stdin.buffer.read(1<<20), b""): h.update(b)\n'
        "print(h.hexdigest())'",
    ),
    (
        "node",
        "node -e 'const h=require(\"crypto\").createHash(\"sha256\");"
        'process.stdin.on("data",d=>h.update(d)).on("end",()=>console.log(h.digest("hex")))\'',
    ),
]

_INFLATERS: List[Tuple[str, str]] = [
    ("gzip", "gzip -dc"),
    (
        "python3",
        "python3 -c 'import gzip,shutil,sys\n"
        "shutil.copyfileobj(gzip.GzipFile(fileobj=sys.stdin.buffer),sys.stdout.buffer,1<<20)'",
    ),
    ("node", "node -e 'process.stdin.pipe(require(\"zlib\").createGunzip()).pipe(process.stdout)'"),
]

_DEFLATERS: List[Tuple[str, str]] = [
    ("gzip", "gzip -1 -c"),
    (
        "python3",
        "python3 -c 'import gzip,shutil,sys\n"
        'g=gzip.GzipFile(fileobj=sys.stdout.buffer,mode="wb",compresslevel=1)\n'
        "shutil.copyfileobj(sys.stdin.buffer,g,1<<20)\n"
        "g.close()'",
    ),
    (
        "node",
        "node -e 'process.stdin.pipe(require(\"zlib\").createGzip({level:1})).pipe(process.stdout)'",
    ),
]

_DECODERS: List[Tuple[str, str]] = [
    ("base64", "base64 -d"),
    ("openssl", "openssl base64 -d -A"),
    (
        "python3",
        "python3 -c 'import base64,sys\n"
        "sys.stdout.buffer.write(base64.b64decode(sys.stdin.buffer.read()))'",
    ),
    (
        "node",
        "node -e 'let s=\"\";process.stdin.on(\"data\",d=>s+=d).on(\"end\",()=>process.stdout.write(Buffer.from(s,\"base64\")))'",
    ),
]


@dataclass(frozen=True)
class SandboxCommands:
    """The commands a sandbox can run, or None where it has no tool for the job."""

    sha256: Optional[str] = None
    inflate: Optional[str] = None
    deflate: Optional[str] = None
    decode_base64: Optional[str] = None


def _pick(table: List[Tuple[str, str]], tools: FrozenSet[str]) -> Optional[str]:
    return next((command for tool, command in table if tool in tools), None)


def commands_for(tools: FrozenSet[str]) -> SandboxCommands:
    return SandboxCommands(
        sha256=_pick(_HASHERS, tools),
        inflate=_pick(_INFLATERS, tools),
        deflate=_pick(_DEFLATERS, tools),
        decode_base64=_pick(_DECODERS, tools),
    )


class EXIT:
    """Exit codes of the scripts, read by the SDK."""

    NO_DIRECTORY = 20
    EXISTS = 21
    CANNOT_CREATE = 22
    NOT_FILE = 23
    MISMATCH = 24
    CANNOT_PLACE = 25


def _sub(text: str) -> str:
    return (
        text.replace("@MISMATCH@", str(EXIT.MISMATCH))
        .replace("@EXISTS@", str(EXIT.EXISTS))
        .replace("@CANNOT_PLACE@", str(EXIT.CANNOT_PLACE))
        .replace("@CANNOT_CREATE@", str(EXIT.CANNOT_CREATE))
        .replace("@NO_DIRECTORY@", str(EXIT.NO_DIRECTORY))
        .replace("@NOT_FILE@", str(EXIT.NOT_FILE))
    )


def _place_functions(sha256: str) -> str:
    return "\nairlock_sha256() { " + sha256 + "; }" + _sub(
        r"""
airlock_fail() { code=$1; shift; printf "airlock: %s\n" "$*" >&2; exit "$code"; }
airlock_verify() {
  got=${1%% *}
  [ "$got" = "$want" ] && return 0
  [ -n "$got" ] || airlock_fail 1 "could not compute the SHA-256 of $tmp"
  have=$(($(wc -c < "$tmp")))
  [ "$have" = "$2" ] || airlock_fail @MISMATCH@ "wrote $have of $2 bytes; nothing was kept"
  airlock_fail @MISMATCH@ "SHA-256 mismatch: received $got, expected $want; nothing was kept"
}
airlock_place() {
  if [ -n "$4" ]; then chmod -- "$4" "$1" || airlock_fail @CANNOT_PLACE@ "could not set the mode of $1"; fi
  [ -d "$2" ] && airlock_fail @EXISTS@ "$2 is a directory"
  if [ "$3" = 1 ]; then
    mv -f -- "$1" "$2" || airlock_fail @CANNOT_PLACE@ "could not rename into $2"
  elif ln -- "$1" "$2" 2>/dev/null; then
    rm -f -- "$1"
  else
    { [ -e "$2" ] || [ -L "$2" ]; } && airlock_fail @EXISTS@ "$2 exists (not replaced)"
    ( set -C; : > "$2" ) 2>/dev/null || airlock_fail @EXISTS@ "$2 exists (not replaced)"
    mv -f -- "$1" "$2" || { rm -f -- "$2"; airlock_fail @CANNOT_PLACE@ "could not rename into $2"; }
  fi
}"""
    )


_OPEN_TEMP = _sub(
    r"""
dest=$1 want=$2 replace=$3 mode=$4 rand=$5
case $dest in */*) dir=${dest%/*}; dir=${dir:-/} ;; *) dir=. ;; esac
base=${dest##*/}
[ -d "$dir" ] || airlock_fail @NO_DIRECTORY@ "no such directory: $dir"
if [ "$replace" != 1 ]; then { [ -e "$dest" ] || [ -L "$dest" ]; } && airlock_fail @EXISTS@ "$dest exists (not replaced)"; fi
short=$base
while [ ${#short} -gt 40 ]; do short=${short%?}; done
tmp=$dir/.$short.$rand.airlock-part"""
)

# SHA256 ``-``: the bytes are followed on stdin by their SHA-256 (64 hex digits and a newline),
# so that the host hashes them while they travel. ``airlock_trailer SIZE`` reads it from the
# temp file and cuts it off, or refuses when it is not there or not well-formed.
_TRAILER = _sub(
    r"""
airlock_trailer() {
  want=$(dd if="$tmp" bs=1 skip="$1" count=65 2>/dev/null)
  case $want in *[!0-9a-f]*) want= ;; esac
  if [ ${#want} != 64 ]; then
    have=$(($(wc -c < "$tmp")))
    [ "$have" -ge "$1" ] || airlock_fail @MISMATCH@ "wrote $have of $1 bytes; nothing was kept"
    airlock_fail @MISMATCH@ "the SHA-256 after the bytes did not arrive intact; nothing was kept"
  fi
  dd if=/dev/null of="$tmp" bs=1 seek="$1" 2>/dev/null || airlock_fail 1 "could not cut the SHA-256 from $tmp"
}"""
)

_CREATE_TEMP = _sub(
    r"""
set -C
command : 2>/dev/null > "$tmp" || airlock_fail @CANNOT_CREATE@ "could not create a temp file in $dir"
set +C"""
)


def push_script(commands: SandboxCommands) -> str:
    """``sh -c PUSH airlock-push DEST SHA256 REPLACE MODE RAND ENCODING SIZE``; SHA256 ``-``
    means the digest follows the bytes on stdin (see the TypeScript SDK's ``pushScript``)."""
    assert commands.sha256
    inflate = commands.inflate or "false"
    return (
        _place_functions(commands.sha256)
        + _TRAILER
        + "\n"
        + _OPEN_TEMP
        + _CREATE_TEMP
        + "\ntrap 'rm -f -- \"$tmp\"' EXIT\n"
        + "trap 'exit 129' HUP INT TERM PIPE\n"
        + 'if [ "$6" = gzip ]; then '
        + inflate
        + ' > "$tmp"; else cat > "$tmp"; fi\n'
        + '[ "$want" = - ] && airlock_trailer "$7"\n'
        + 'airlock_verify "$(airlock_sha256 < "$tmp")" "$7"\n'
        + 'airlock_place "$tmp" "$dest" "$replace" "$mode"\n'
        + "trap - EXIT\n"
        + 'printf "ok\\n"'
    )


def chunked_open_script(commands: SandboxCommands) -> str:
    assert commands.sha256
    return _place_functions(commands.sha256) + "\n" + _OPEN_TEMP + _CREATE_TEMP + '\nprintf "%s\\n" "$tmp"'


def chunk_script(commands: SandboxCommands) -> str:
    assert commands.decode_base64
    return (
        'printf "%s" "$2" | '
        + commands.decode_base64
        + ' >> "$1" || { rm -f -- "$1"; printf "airlock: could not append to %s\\n" "$1" >&2; exit '
        + str(EXIT.CANNOT_CREATE)
        + "; }"
    )


def chunked_finish_script(commands: SandboxCommands) -> str:
    assert commands.sha256
    return (
        _place_functions(commands.sha256)
        + "\ntmp=$1 dest=$2 want=$3\n"
        + "trap 'rm -f -- \"$tmp\"' EXIT\n"
        + 'airlock_verify "$(airlock_sha256 < "$tmp")" "$6"\n'
        + 'airlock_place "$tmp" "$dest" "$4" "$5"\n'
        + "trap - EXIT\n"
        + 'printf "ok\\n"'
    )


COLLECT_MAGIC = "airlock-collect 2"
COLLECT_TRAILER = "airlock-sha256"


def collect_script(commands: SandboxCommands) -> str:
    """``sh -c COLLECT airlock-collect SRC COMPRESS [raw]`` (see the TypeScript SDK)."""
    assert commands.sha256
    deflate = commands.deflate
    send = f'if [ "$enc" = gzip ]; then {deflate}; else cat; fi' if deflate else "cat"
    sampling = ""
    if deflate:
        sampling = (
            '[ "$2" = always ] && enc=gzip\n'
            'if [ "$2" = auto ] && [ "$size" -gt 65536 ]; then\n'
            f'  sample=$(dd if="$src" bs=65536 count=1 2>/dev/null | {deflate} | wc -c)\n'
            '  [ -n "$sample" ] && [ $((sample * 10)) -le $((65536 * 9)) ] && enc=gzip\n'
            "fi"
        )
    return (
        "\nairlock_sha256() { " + commands.sha256 + "; }\n"
        'airlock_fail() { code=$1; shift; printf "airlock: %s\\n" "$*" >&2; exit "$code"; }\n'
        "airlock_send() { " + send + "; }\n"
        "src=$1\n"
        f'[ -f "$src" ] || airlock_fail {EXIT.NOT_FILE} "not a regular file: $src"\n'
        f'[ -r "$src" ] || airlock_fail {EXIT.NOT_FILE} "cannot read $src"\n'
        f'size=$(($(wc -c < "$src"))) || airlock_fail {EXIT.NOT_FILE} "cannot read $src"\n'
        "enc=identity\n" + sampling + "\n"
        f'if [ "$3" = raw ]; then printf "{COLLECT_MAGIC} %s %s\\n" "$size" "$enc" >&2\n'
        f'else printf "{COLLECT_MAGIC} %s %s\\n" "$size" "$enc"; fi\n'
        f'{{ printf "{COLLECT_TRAILER} " >&2; airlock_sha256 < "$src" >&2; }} &\n'
        "airlock_send < \"$src\"\n"
        "wait"
    )
