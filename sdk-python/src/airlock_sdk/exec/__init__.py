"""The exec transport: files into and out of a sandbox with no network, through the exec
channel the host already has (``docker exec -i``, ``ssh``, ``kubectl exec -i``)."""
from .adapters import docker_exec, kubectl_exec, shell_quote, ssh_exec
from .collect import (
    CollectedFile,
    CollectedStream,
    collect_bytes,
    collect_stream,
    collect_to_local_file,
)
from .core import CliAdapter, ExecAdapter, ExecExit, ExecProcess
from .push import PushResult, push_bytes, push_local_file, push_stream

__all__ = [
    "CliAdapter",
    "CollectedFile",
    "CollectedStream",
    "ExecAdapter",
    "ExecExit",
    "ExecProcess",
    "PushResult",
    "collect_bytes",
    "collect_stream",
    "collect_to_local_file",
    "docker_exec",
    "kubectl_exec",
    "push_bytes",
    "push_local_file",
    "push_stream",
    "shell_quote",
    "ssh_exec",
]
