"""The exec channel into a sandbox: run an argv there with a stdin, read its stdout and exit
code. :class:`CliAdapter` spawns the usual CLI (``docker``, ``ssh``, ``kubectl``); another
channel fits by implementing :meth:`ExecAdapter.start`."""
from __future__ import annotations

import errno
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import IO, Callable, Iterable, Iterator, List, Optional, Sequence, Union

from ..errors import AirlockError, exec_error
from .scripts import PROBE_SCRIPT, PROBED_TOOLS, SandboxCommands, commands_for

STDERR_KEEP = 8 * 1024
SMALL_OUTPUT = 64 * 1024
#: The size asked of Linux for a pipe that carries a file's bytes to or from the CLI (64 KiB by
#: default; 1 MiB is the most an unprivileged process gets): the two then take turns far less
#: often, which counts most on a busy machine.
PIPE_BYTES = 1024 * 1024
#: What a command's stdin may be: ``PIPE`` (written by the SDK), an open local file, or None.
StdinSpec = Union[int, IO[bytes], None]


@dataclass
class ExecExit:
    """How a command run in the sandbox ended: its exit code (128 + signal when a signal ended
    it) and the end of its stderr (at most 8 KiB)."""

    code: int
    stderr: str
    stdout: str = ""


class ExecProcess:
    """A command running in the sandbox: ``stdin`` / ``stdout`` are pipes when asked for."""

    stdin: Optional[IO[bytes]]
    stdout: Optional[IO[bytes]]

    def wait(self) -> ExecExit:  # pragma: no cover - interface
        raise NotImplementedError


class ExecAdapter:
    """A way to run commands in one sandbox.

    ``label`` names the sandbox in messages. ``stdin = False`` marks an exec API that cannot
    stream stdin: pushes then travel as base64 in chunks of at most 64 KiB, one command each.
    """

    label: str = "sandbox"
    stdin: bool = True

    def start(
        self, argv: Sequence[str], stdin: StdinSpec, stdout: Union[int, IO[bytes]]
    ) -> ExecProcess:
        """Runs ``argv`` in the sandbox (argv[0] looked up on its PATH, no shell in between);
        ``stdin`` / ``stdout`` are ``subprocess.PIPE`` or open local files (handed to the CLI,
        so the bytes never pass through this process); stdin None is empty."""
        raise NotImplementedError


class _CliProcess(ExecProcess):
    def __init__(self, popen: "subprocess.Popen[bytes]") -> None:
        self._popen = popen
        self.stdin = popen.stdin
        self.stdout = popen.stdout
        self._stderr = ""
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()

    def _read_stderr(self) -> None:
        assert self._popen.stderr is not None
        for line in iter(lambda: self._popen.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self._stderr = (self._stderr + line.decode("utf-8", "replace"))[-STDERR_KEEP:]

    def wait(self) -> ExecExit:
        code = self._popen.wait()
        self._reader.join()
        if self._popen.stderr:
            self._popen.stderr.close()
        return ExecExit(128 - code if code < 0 else code, self._stderr)


class CliAdapter(ExecAdapter):
    """Runs ``command`` with ``args_for(argv)``: a local CLI that relays argv and stdio to the
    sandbox. Bytes go through its stdin and stdout only, never its arguments."""

    def __init__(
        self, label: str, command: str, args_for: Callable[[Sequence[str]], List[str]]
    ) -> None:
        self.label = label
        self.command = command
        self._args_for = args_for

    def start(
        self, argv: Sequence[str], stdin: StdinSpec, stdout: Union[int, IO[bytes]]
    ) -> ExecProcess:
        try:
            popen = subprocess.Popen(
                [self.command, *self._args_for(argv)],
                stdin=subprocess.DEVNULL if stdin is None else stdin,
                stdout=stdout,
                stderr=subprocess.PIPE,
            )
        except OSError as error:
            name = errno.errorcode.get(error.errno or 0, str(error))
            raise exec_error(
                "exec_unavailable", f"could not run {self.command}: spawn {self.command} {name}"
            ) from error
        return _CliProcess(popen)


def widen_pipe(pipe: IO[bytes]) -> None:
    """Asks Linux for a pipe of ``PIPE_BYTES``; elsewhere, for what is not a pipe, or when the
    account has used up its pipe memory, it stays as it was."""
    if not sys.platform.startswith("linux"):
        return
    import fcntl

    try:
        fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (OSError, ValueError, AttributeError):
        pass


def feed(process: ExecProcess, chunks: Iterable[bytes]) -> "threading.Thread":
    """Writes ``chunks`` to the process's stdin on a thread, then closes it. A command that
    exits before reading all of its stdin closes the pipe: its exit code says why."""
    sink = process.stdin
    assert sink is not None
    widen_pipe(sink)
    failure: List[BaseException] = []

    def run() -> None:
        try:
            for chunk in chunks:
                sink.write(chunk)
        except (BrokenPipeError, ValueError):
            pass
        except BaseException as error:  # the source failed: the command sees a short stdin
            failure.append(error)
        finally:
            try:
                sink.close()
            except OSError:
                pass
            close = getattr(chunks, "close", None)
            if callable(close):
                close()

    thread = threading.Thread(target=run, daemon=True)
    thread.failure = failure  # type: ignore[attr-defined]
    thread.start()
    return thread


def run_small(
    exec: ExecAdapter, argv: Sequence[str], chunks: Optional[Iterable[bytes]] = None
) -> ExecExit:
    """Runs a command whose stdout is short text (a probe, a path, ``ok``)."""
    process = exec.start(argv, subprocess.PIPE if chunks is not None else None, subprocess.PIPE)
    writer = feed(process, chunks) if chunks is not None else None
    assert process.stdout is not None
    kept = bytearray()
    for block in iter(lambda: process.stdout.read(65536), b""):  # type: ignore[union-attr]
        if len(kept) < SMALL_OUTPUT:
            kept += block
    process.stdout.close()
    exit = process.wait()
    if writer is not None:
        writer.join()
        if writer.failure:  # type: ignore[attr-defined]
            raise writer.failure[0]  # type: ignore[attr-defined]
    exit.stdout = kept.decode("utf-8", "replace")
    return exit


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    return lines[-1] if lines else ""


def exec_failure(exec: ExecAdapter, what: str, exit: ExecExit, code: str = "exec_failed") -> AirlockError:
    """A command in the sandbox that failed: its exit code and the last line of its stderr."""
    said = last_line(exit.stderr)
    if said.startswith("airlock: "):
        said = said[len("airlock: ") :]
    return exec_error(code, f"{what} in {exec.label}: {said or f'exit code {exit.code}'}")


_probes: "weakref.WeakKeyDictionary[ExecAdapter, SandboxCommands]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def sandbox_commands(exec: ExecAdapter) -> SandboxCommands:
    """What the sandbox can run to hash, inflate, deflate and decode: asked once per adapter."""
    with _lock:
        known = _probes.get(exec)
    if known is not None:
        return known
    exit = run_small(exec, ["sh", "-c", PROBE_SCRIPT])
    if exit.code != 0:
        raise exec_failure(exec, "probing for tools", exit)
    tools = frozenset(line.strip() for line in exit.stdout.split("\n") if line.strip() in PROBED_TOOLS)
    commands = commands_for(tools)
    with _lock:
        _probes[exec] = commands
    return commands


def with_hasher(exec: ExecAdapter) -> SandboxCommands:
    """The sandbox's commands, or the refusal to move bytes that cannot be checked there."""
    commands = sandbox_commands(exec)
    if not commands.sha256:
        raise exec_error(
            "sandbox_cannot_verify",
            f"{exec.label} has none of sha256sum, openssl, python3 or node to check a SHA-256; nothing was moved",
        )
    return commands


# Whether gzip pays on a channel, learnt from its transfers (as the TypeScript SDK's rates.ts).
_GZIP_BYTES_PER_S = 60_000_000
_MEASURED_FROM = 1024 * 1024
_rates: "weakref.WeakKeyDictionary[ExecAdapter, dict]" = weakref.WeakKeyDictionary()


def record_rate(exec: ExecAdapter, direction: str, encoding: str, size: int, seconds: float) -> None:
    if size < _MEASURED_FROM or not seconds > 0:
        return
    with _lock:
        known = _rates.setdefault(exec, {})
        key = f"{direction} {encoding}"
        known[key] = max(known.get(key, 0.0), size / seconds)


def gzip_may_pay(exec: ExecAdapter, direction: str) -> bool:
    with _lock:
        known = dict(_rates.get(exec, {}))
    identity = known.get(f"{direction} identity")
    if identity is None:
        return True
    return identity < known.get(f"{direction} gzip", _GZIP_BYTES_PER_S)


def chunked(read: Callable[[int], bytes], size: int = 256 * 1024) -> Iterator[bytes]:
    """A file-like's bytes as chunks."""
    while True:
        block = read(size)
        if not block:
            return
        yield block
