"""What `make demo` prints: a line per step on the console, everything else in a log file.

The console gets `[demo] ...` lines: each step with its duration, progress bars (on a
terminal) where a step takes a while, the summary. The log file gets those lines too, plus
the full output of every `dagster` subprocess (Dagster events, Spark, Ivy) and the demo's
own warnings and tracebacks. `verbose=True` also shows all of it on the console, live.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, TextIO

from tqdm import tqdm

PREFIX = "[demo]"
POLL_INTERVAL = 1.0  # seconds between progress polls while a subprocess runs


class DemoError(Exception):
    """A step of the demo failed; the message says what and, if known, why."""


class StepFailed(Exception):
    """Raised by `DemoOutput.step` once the failure is printed; carries the step's title."""

    def __init__(self, title: str, error: str) -> None:
        super().__init__(f"{title}: {error}")
        self.title = title
        self.error = error


def duration(seconds: float) -> str:
    """`0.4s`, `12.3s`, `2m05s`."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


@dataclass
class Step:
    """A step in progress; set `result` to say what it did (printed with its duration)."""

    title: str
    result: str = ""


class _Tee:
    """A text stream that writes to several streams (the console and the log)."""

    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


class DemoOutput:
    """The demo's console and its log file; use as a context manager.

    Inside it, Python warnings and anything written to `sys.stderr` go to the log (and to
    the console too when verbose).

    Args:
        log_path: the log file (created with its directory; appended to).
        verbose: also show the log's content on the console, live.
        console: where the `[demo]` lines go (stdout by default).

    Examples:
        >>> with DemoOutput(Path(".data/logs/demo.log")) as out:
        ...     with out.step("provisioning the topology") as step:
        ...         step.result = "3 consumers created"
    """

    def __init__(self, log_path: Path, verbose: bool = False, console: TextIO | None = None):
        self.log_path = log_path
        self.verbose = verbose
        self.console = console or sys.stdout
        self._terminal = sys.stderr  # progress bars: tqdm shows them only on a terminal
        self._log: IO[str] | None = None
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> DemoOutput:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self._stack.enter_context(self.log_path.open("a", buffering=1))
        stderr = _Tee(self._terminal, self._log) if self.verbose else self._log
        self._stack.enter_context(contextlib.redirect_stderr(stderr))  # type: ignore[arg-type]
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None and not isinstance(exc, StepFailed):
            self.log("".join(traceback.format_exception(exc)))
        self._stack.close()
        self._log = None

    @property
    def log_file(self) -> IO[str]:
        if self._log is None:
            raise RuntimeError("DemoOutput is used outside its `with` block")
        return self._log

    def log(self, text: str) -> None:
        """Writes `text` to the log only (and to the console when verbose)."""
        self.log_file.write(text if text.endswith("\n") else text + "\n")
        if self.verbose:
            self.console.write(text if text.endswith("\n") else text + "\n")
            self.console.flush()

    def say(self, message: str) -> None:
        """Prints `[demo] message` on the console and writes it to the log."""
        line = f"{PREFIX} {message}"
        print(line, file=self.console, flush=True)
        self.log_file.write(line + "\n")

    @contextlib.contextmanager
    def step(self, title: str, *, long: bool = False, timed: bool = True) -> Iterator[Step]:
        """Times a step; prints its outcome, or on an error the step, the error and raises.

        A short step prints one line when done: `title: result (0.3s)`. A `long` one prints
        its title first (its own lines follow) and, if `timed`, `done in 1m02s: result` at
        the end.

        Raises:
            StepFailed: anything the step raised, once printed (the traceback goes to the log).
        """
        step = Step(title)
        started = time.monotonic()
        if long:
            self.say(title)
        try:
            yield step
        except Exception as error:
            self.log("".join(traceback.format_exception(error)))
            message = str(error) if isinstance(error, DemoError) else _describe(error)
            self.say(f"FAILED: {title} (after {duration(time.monotonic() - started)})")
            self.say(f"  {message}")
            raise StepFailed(title, message) from error
        took = duration(time.monotonic() - started)
        if long and timed:
            self.say(f"  done in {took}" + (f": {step.result}" if step.result else ""))
        elif not long:
            self.say(f"{title}" + (f": {step.result}" if step.result else "") + f" ({took})")

    def progress(self, total: int | None, description: str, unit: str) -> tqdm:
        """A progress bar on the terminal's stderr (none when it is not a terminal or verbose)."""
        return tqdm(
            total=total,
            desc=f"{PREFIX}   {description}",
            unit=unit,
            file=self._terminal,
            leave=False,
            disable=True if self.verbose else None,
            dynamic_ncols=True,
        )

    def run(
        self,
        command: Sequence[str],
        *,
        env: dict[str, str],
        cwd: Path,
        poll: Callable[[], None] | None = None,
    ) -> tuple[int, str]:
        """Runs a command with its output in the log (and on the console when verbose).

        Args:
            command: the command and its arguments.
            env: its environment.
            cwd: its working directory.
            poll: called about every second while it runs, and once after (progress).

        Returns:
            The exit code, and the last non-blank line the command printed.
        """
        self.log(f"$ {' '.join(command)}")
        self.log_file.flush()
        start = self.log_path.stat().st_size
        stdout = subprocess.PIPE if self.verbose else self.log_file
        with subprocess.Popen(
            command, env=env, cwd=cwd, stdout=stdout, stderr=subprocess.STDOUT, text=True
        ) as process:
            copier = None
            if self.verbose:
                copier = threading.Thread(target=self._copy, args=(process.stdout,), daemon=True)
                copier.start()
            while process.poll() is None:
                if poll is not None:
                    poll()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=POLL_INTERVAL)
            if copier is not None:
                copier.join()
        if poll is not None:
            poll()
        self.log_file.flush()
        with self.log_path.open(errors="replace") as log:
            log.seek(start)
            lines = [line.strip() for line in log if line.strip()]
        return process.returncode, lines[-1] if lines else ""

    def _copy(self, source: IO[str]) -> None:
        for line in source:
            self.log_file.write(line)
            self.console.write(line)
        self.console.flush()


def _describe(error: BaseException) -> str:
    """`TypeName: message`, the message's first line only."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
