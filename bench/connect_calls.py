"""A Spark Connect client's requests, timed and charged to the project line that made them.

`ConnectCalls` wraps, while it is active, the client's three methods that send the requests
a pipeline's time goes to: `_analyze` (a schema, `is_cached`, `persist`/`cache` and
`unpersist`...), `_execute` (registering a UDF, a UDTF or a data source) and
`_execute_and_fetch_as_iterator` (queries, and commands such as `MERGE`, a write or a SQL
statement). Configuration, interrupt, release and artifact requests are not counted. Each
request's seconds go to the innermost frame of the project's own code on the stack
(`pipelines/silver/stage.py:231 <lambda>`), so a step that looks like one call shows the
requests it really is:

    with ConnectCalls() as calls:
        run_contract_silver(...)
    calls.print_top(10)

A request's seconds are the client's wall time from sending it to its last response: the
server's planning and execution and the gRPC latency. A query's results are read as they
arrive, so its seconds include what the caller does between them (nothing, for `collect`).
Not re-entrant: one `with` at a time.
"""

from __future__ import annotations

import collections
import functools
import sys
import time
from pathlib import Path
from types import TracebackType

from pyspark.sql.connect.client.core import SparkConnectClient

PROJECT = Path(__file__).resolve().parent.parent
OWN = tuple(str(PROJECT / folder) for folder in ("pipelines", "resources", "assets"))
REQUESTS = ("_analyze", "_execute", "_execute_and_fetch_as_iterator")


def _caller() -> str:
    """The innermost frame of the project's code on the stack, as `path:line function`."""
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(OWN):
            return f"{Path(path).relative_to(PROJECT)}:{frame.f_lineno} {frame.f_code.co_name}"
        frame = frame.f_back
    return "(elsewhere)"


class ConnectCalls:
    """Times the Spark Connect requests made while active, by the project line that made them."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.count: collections.Counter[str] = collections.Counter()
        self._originals: dict[str, object] = {}

    def __enter__(self) -> ConnectCalls:
        if self._originals:
            raise RuntimeError("ConnectCalls is already active: one `with` at a time")
        for name in REQUESTS:
            original = getattr(SparkConnectClient, name)
            self._originals[name] = original
            setattr(SparkConnectClient, name, self._timed(name, original))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for name, original in self._originals.items():
            setattr(SparkConnectClient, name, original)
        self._originals.clear()

    def _timed(self, name: str, original):
        def record(where: str, started: float) -> None:
            self.seconds[where] += time.perf_counter() - started
            self.count[where] += 1

        if name == "_execute_and_fetch_as_iterator":  # a generator: timed until exhausted

            @functools.wraps(original)
            def fetching(client, *args, **kwargs):
                where, started = _caller(), time.perf_counter()
                try:
                    yield from original(client, *args, **kwargs)
                finally:
                    record(where, started)

            return fetching

        @functools.wraps(original)
        def calling(client, *args, **kwargs):
            where, started = _caller(), time.perf_counter()
            try:
                return original(client, *args, **kwargs)
            finally:
                record(where, started)

        return calling

    def clear(self) -> None:
        self.seconds.clear()
        self.count.clear()

    def total(self) -> tuple[float, int]:
        """All requests' seconds and their number."""
        return sum(self.seconds.values()), sum(self.count.values())

    def print_top(self, limit: int = 12) -> None:
        """The lines whose requests took longest: seconds, requests, line."""
        seconds, requests = self.total()
        print(f"    Spark Connect requests: {requests}, {seconds:.2f}s; the longest by line:")
        ranked = sorted(self.seconds.items(), key=lambda item: -item[1])
        for where, spent in ranked[:limit]:
            print(f"    {spent:7.2f}s {self.count[where]:4d}  {where}")
