"""Ready exec adapters: ``docker exec -i``, ``ssh`` over a ControlMaster socket and
``kubectl exec -i``. Each spawns the CLI with ``subprocess``; it must be on the host's PATH."""
from __future__ import annotations

from typing import List, Optional, Sequence

from .core import CliAdapter


def shell_quote(word: str) -> str:
    """Quotes one word for a POSIX shell: ``'...'``, with ``'`` as ``'\\''``."""
    return "'" + word.replace("'", "'\\''") + "'"


def _refuse_option(what: str, value: str) -> None:
    if value == "" or value.startswith("-") or "\0" in value:
        raise ValueError(f'Airlock: {what} must be non-empty and must not start with "-"')


def docker_exec(
    container: str,
    user: Optional[str] = None,
    workdir: Optional[str] = None,
    command: str = "docker",
) -> CliAdapter:
    """Runs commands in a container with ``docker exec -i <container> <argv...>``."""
    _refuse_option("docker_exec's container", container)
    flags: List[str] = []
    if user is not None:
        flags += ["--user", user]
    if workdir is not None:
        flags += ["--workdir", workdir]
    return CliAdapter(
        f"{command} exec {container}",
        command,
        lambda argv: ["exec", "-i", *flags, container, *argv],
    )


def kubectl_exec(
    pod: str,
    namespace: Optional[str] = None,
    container: Optional[str] = None,
    context: Optional[str] = None,
    command: str = "kubectl",
) -> CliAdapter:
    """Runs commands in a pod: ``kubectl exec -i [-n ns] [-c container] <pod> -- <argv...>``."""
    _refuse_option("kubectl_exec's pod", pod)
    flags: List[str] = []
    if context is not None:
        flags += ["--context", context]
    if namespace is not None:
        flags += ["-n", namespace]
    if container is not None:
        flags += ["-c", container]
    where = f"{namespace}/{pod}" if namespace else pod
    return CliAdapter(
        f"{command} exec {where}",
        command,
        lambda argv: ["exec", "-i", *flags, pod, "--", *argv],
    )


def ssh_exec(
    host: str,
    user: Optional[str] = None,
    port: Optional[int] = None,
    identity_file: Optional[str] = None,
    control_path: Optional[str] = None,
    control_persist: str = "60s",
    ssh_args: Sequence[str] = (),
    command: str = "ssh",
) -> CliAdapter:
    """Runs commands over SSH: ``ssh -T -o BatchMode=yes [ControlMaster options] host -- '...'``.
    SSH hands the remote shell one command line, so each argv word is quoted. ``control_path``
    (a ControlMaster socket) is strongly advised: without it each command pays a handshake."""
    _refuse_option("ssh_exec's host", host)
    if user is not None:
        _refuse_option("ssh_exec's user", user)
    target = f"{user}@{host}" if user else host
    args: List[str] = ["-T", "-o", "BatchMode=yes"]
    if port is not None:
        args += ["-p", str(port)]
    if identity_file is not None:
        args += ["-i", identity_file]
    if control_path is not None:
        args += [
            "-o",
            "ControlMaster=auto",
            "-o",
            f"ControlPath={control_path}",
            "-o",
            f"ControlPersist={control_persist}",
        ]
    args += [*ssh_args, target, "--"]
    return CliAdapter(
        f"ssh {target}", command, lambda argv: [*args, " ".join(shell_quote(w) for w in argv)]
    )
