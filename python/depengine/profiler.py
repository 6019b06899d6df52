"""Where the engine's time went: ``with depengine.profiler.profile("trace.json") as prof:``.

While the block runs, every operation of the engine is recorded (name,
device, worker or stream, start and duration). On exit the profiler waits
for the operations pushed inside the block, stops, and writes a Chrome trace
(open it at https://ui.perfetto.dev) when given a path::

    with depengine.profiler.profile("trace.json") as prof:
        train_one_epoch()
    print(prof.key_averages())            # a table, longest total first
    slowest = prof.key_averages(sort_by="max")[0]
"""

from __future__ import annotations

import os
from typing import List, Optional, Union

from ._depengine import Engine, OpStats, ProfiledOp, _Profiler

__all__ = ["profile", "KeyAverages"]


class KeyAverages(List[OpStats]):
    """The per-name statistics (a list of OpStats) that prints as a table."""

    def __init__(self, profiler: _Profiler, sort_by: str) -> None:
        super().__init__(profiler.key_averages(sort_by))
        self._profiler = profiler
        self._sort_by = sort_by

    def table(self, sort_by: Optional[str] = None, row_limit: int = 0) -> str:
        """The statistics as text; ``row_limit`` = 0 prints every name."""
        return self._profiler.table(sort_by or self._sort_by, row_limit)

    def __str__(self) -> str:
        return self.table()


class profile:
    """Records the operations of ``engine`` (the default engine if None) inside a ``with`` block."""

    def __init__(self, path: Union[str, os.PathLike, None] = None, engine: Optional[Engine] = None) -> None:
        self.path = os.fspath(path) if path is not None else None
        self._engine = engine
        self._profiler: Optional[_Profiler] = None

    def __enter__(self) -> "profile":
        self._profiler = _Profiler(self._engine)
        self._profiler.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        profiler = self._require()
        engine = self._engine if self._engine is not None else _default_engine()
        try:
            # Operations still running would be left out of the recording.
            engine.wait_all()
        except BaseException:
            if exc_type is None:
                raise
        finally:
            profiler.stop()
            if self.path is not None:
                profiler.write_trace(self.path)

    def _require(self) -> _Profiler:
        if self._profiler is None:
            raise RuntimeError("profile: use it as a context manager (with profile(...) as prof:)")
        return self._profiler

    def key_averages(self, sort_by: str = "total") -> KeyAverages:
        """Per-name statistics, ordered by 'total', 'count', 'mean', 'max' or 'name'."""
        return KeyAverages(self._require(), sort_by)

    def ops(self) -> List[ProfiledOp]:
        """Every recorded operation, by start time."""
        return self._require().ops()

    def trace_json(self) -> str:
        """The recording as Chrome trace-event JSON."""
        return self._require().trace_json()

    @property
    def wall_us(self) -> float:
        return self._require().wall_us


def _default_engine() -> Engine:
    from ._depengine import default_engine

    return default_engine()
