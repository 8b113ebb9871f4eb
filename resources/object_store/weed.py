"""SeaweedFS's `weed` binary: where it is, and its build from the Go module proxy.

SeaweedFS (Apache-2.0) is the S3-compatible server the tests and `jsl demo --s3` run. No
Python package ships it, and `go install github.com/seaweedfs/seaweedfs/weed@...` is refused
(its go.mod has replace directives), so `jsl setup` builds it: `go mod download` fetches the
pinned module version from the Go module proxy, a writable copy of it is built with
`go build ./weed` into the tools cache (`~/.cache/jetstream-lakehouse/tools/seaweedfs-<version>/
weed`, or `$JSL_TOOLS_DIR`), and the copy is removed. The build takes minutes the first time
(Go's build cache makes a rebuild faster); with the binary already there, nothing is done.
Without `go` on PATH, set-up says so on one line and the tests that need S3 skip, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from resources.object_store.errors import S3ServerError

MODULE = "github.com/seaweedfs/seaweedfs"
# The version the Go module proxy serves here (SeaweedFS 4.53, built 2026-11-09).
MODULE_VERSION = "v0.0.0-20261109003541-7506e5f91cd6"
BINARY_ENV = "JSL_WEED_BIN"
TOOLS_ENV = "JSL_TOOLS_DIR"
DEFAULT_TOOLS_DIR = Path.home() / ".cache" / "jetstream-lakehouse" / "tools"


def tools_dir() -> Path:
    """Where set-up puts the tools it builds: `$JSL_TOOLS_DIR`, else the user's cache."""
    return Path(os.environ.get(TOOLS_ENV) or DEFAULT_TOOLS_DIR)


def installed_weed() -> Path:
    """Where `install_weed` puts the pinned version's binary."""
    return tools_dir() / f"seaweedfs-{MODULE_VERSION}" / "weed"


def find_weed_binary() -> Path:
    """Locates the `weed` binary: `$JSL_WEED_BIN`, then the one set-up built, then PATH.

    Raises:
        S3ServerError: there is none (the message says how to get one).
    """
    if override := os.environ.get(BINARY_ENV):
        if not os.access(override, os.X_OK):
            raise S3ServerError(f"{BINARY_ENV}={override!r} is not an executable file")
        return Path(override)
    if installed_weed().is_file():
        return installed_weed()
    if on_path := shutil.which("weed"):
        return Path(on_path)
    go = "" if shutil.which("go") else " (it needs Go: https://go.dev/dl/)"
    raise S3ServerError(
        f"no SeaweedFS `weed` binary: run `make setup` to build it into {installed_weed()}"
        f"{go}, put `weed` on PATH, or set {BINARY_ENV} to its path"
    )


def install_weed(
    say: Callable[[str], None] = print, log: Path | None = None, target: Path | None = None
) -> Path | None:
    """Builds the pinned SeaweedFS into `target` (default `installed_weed()`), unless it is there.

    Args:
        say: prints a progress line.
        log: where Go's output goes (appended; None: discarded).
        target: the binary's path.

    Returns:
        The binary, or None when `go` is not on PATH (said on one line).

    Raises:
        S3ServerError: the download or the build failed (the log has Go's output).
    """
    target = target or installed_weed()
    if target.is_file():
        say(f"[setup] SeaweedFS (S3 server for the tests and the demo): {target}")
        return target
    go = shutil.which("go")
    if go is None:
        say(
            "[setup] SeaweedFS: skipped, no `go` on PATH (the tests that need an S3 server skip; "
            "install Go from https://go.dev/dl/ and run `make setup` again)"
        )
        return None
    where = f"; Go's output: {log}" if log else ""
    say(f"[setup] SeaweedFS {MODULE_VERSION}: building with {go} (minutes, once{where})")
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    with (
        open(log, "ab") if log else open(os.devnull, "wb") as output,
        tempfile.TemporaryDirectory(prefix=".weed-build-", dir=target.parent) as scratch,
    ):
        download = _run([go, "mod", "download", "-json", f"{MODULE}@{MODULE_VERSION}"], output)
        module_dir = Path(json.loads(download)["Dir"])
        source = Path(scratch) / "src"
        # The module cache is read-only; the build writes nothing there, but Go wants a
        # writable main module.
        shutil.copytree(module_dir, source, symlinks=True)
        for path in (source, *source.rglob("*")):
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)
        staging = Path(scratch) / "weed"
        _run([go, "build", "-o", str(staging), "./weed"], output, cwd=source)
        staging.replace(target)
    say(f"[setup] SeaweedFS built into {target} ({time.monotonic() - started:.0f}s)")
    return target


def _run(command: list[str], output, cwd: Path | None = None) -> str:
    """Runs `command` with its stderr in `output`; returns its stdout (also copied there)."""
    output.write(f"$ {' '.join(command)}\n".encode())
    output.flush()
    result = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=output, check=False)
    output.write(result.stdout)
    output.flush()
    if result.returncode != 0:
        raise S3ServerError(
            f"`{' '.join(command[:3])} ...` exited with code {result.returncode} building "
            f"SeaweedFS {MODULE_VERSION}"
        )
    return result.stdout.decode()
