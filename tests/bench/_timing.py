"""The timing every benchmark script here shares: the median wall (or CPU) time of repeated calls.

    from _timing import timed                  # the scripts run as `python tests/bench/X.py`
    seconds = timed(lambda: parse(data), runs=5, warm=True)
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any, Callable


def timed_result(fn: Callable[[], Any], runs: int, *, warm: bool = False,
                 collect: str = "never",
                 clock: Callable[[], float] = time.perf_counter) -> tuple[float, Any]:
    """Median wall (or `clock`) time of `runs` calls of `fn`, and what the last call returned.

    `warm`: one untimed call first (grammars loaded, tokenizer built, imports done).
    `collect`: a full garbage collection `"once"` before the runs (no contender pays for
    the garbage another one left; timeit goes further and disables the collector), or
    before `"each"` run (a run's cyclic garbage is not billed to the next), or `"never"`.
    `clock`: `time.process_time` for this process's CPU time instead (what other processes
    on a shared machine take from it is then not counted)."""
    if collect not in ("never", "once", "each"):
        raise ValueError(f"collect must be never, once or each, not {collect!r}")
    if warm:
        fn()
    if collect == "once":
        gc.collect()
    times, out = [], None
    for _ in range(runs):
        if collect == "each":
            gc.collect()
        t = clock()
        out = fn()
        times.append(clock() - t)
    return statistics.median(times), out


def timed(fn: Callable[[], Any], runs: int, *, warm: bool = False,
          collect: str = "never", clock: Callable[[], float] = time.perf_counter) -> float:
    """Median wall (or `clock`) time of `runs` calls of `fn` (see `timed_result`)."""
    return timed_result(fn, runs, warm=warm, collect=collect, clock=clock)[0]


def timed_interleaved(fns: list[Callable[[], Any]], runs: int, *,
                      clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """The median time of each of `fns` over `runs` rounds that call each once, in turn
    (after one garbage collection): a machine that slows down for a while slows every
    contender alike, where `timed` would bill it to the one running then."""
    gc.collect()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, spent in zip(fns, times):
            t = clock()
            fn()
            spent.append(clock() - t)
    return [statistics.median(spent) for spent in times]
