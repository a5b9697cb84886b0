"""bench_python_feed: feeding a 64 MB NumPy array to ``Executor.run`` against
memcpy of the same bytes, side by side in one process.

Three feeds of a [4096, 4096] array into a float32 ``data`` variable that the
program only holds (no op reads it, so the run costs the feed and the fixed
call overhead only):

- ``zero_copy``: C-contiguous float32 — the tensor borrows the array's memory;
- ``copy``: a Fortran-ordered float32 array — copied once into a C-ordered
  tensor (the path of every non-contiguous feed);
- ``convert``: C-contiguous float64 — converted once to float32 while copied.

Peers, in the same process: ``np.copyto`` of the 64 MB float32 array into a
preallocated one (memcpy) — issue 12's bar for a feed, ``>= 0.9`` of it; and,
for the two feeds that must copy, NumPy's own ``np.ascontiguousarray(a,
float32)`` of the same array (a transposing copy or a conversion into fresh
memory cannot run at memcpy's speed; what a feed can promise is to add nothing
to the best copy NumPy makes). Each bandwidth counts the bytes of the float32
tensor. Prints one JSON line per measurement and comparison lines like
``{"bench":"python_feed","feed":"zero_copy","ratio":"feed/memcpy","value":3000,
"goal":">= 0.9","met":true}``.

    PYTHONPATH=build/python python3 bench/bench_python_feed.py [--repeats 15]
"""

import argparse
import json
import statistics
import sys
import time
from typing import Callable, Dict, List

import numpy as np

import flotilla.fluid as fluid

SIDE = 4096  # [4096, 4096] float32 = 64 MiB
GOAL = 0.9


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``fn`` over ``repeats`` calls, after one warm-up."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def feeds() -> Dict[str, np.ndarray]:
    """The three arrays, each holding the same values."""
    base = np.random.default_rng(0).random((SIDE, SIDE), dtype=np.float32)
    return {"zero_copy": base, "copy": np.asfortranarray(base), "convert": base.astype(np.float64)}


def emit(record: Dict) -> None:
    print(json.dumps(record, sort_keys=True), flush=True)


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=15, help="timed calls per measurement (median quoted)")
    args = p.parse_args(argv)

    program, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(program, startup):
        fluid.layers.data(name="x", shape=[SIDE], dtype="float32")
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)

    arrays = feeds()
    nbytes = arrays["zero_copy"].nbytes
    dst = np.empty_like(arrays["zero_copy"])
    memcpy_s = median_seconds(lambda: np.copyto(dst, arrays["zero_copy"]), args.repeats)
    memcpy_gbps = nbytes / memcpy_s / 1e9
    emit({"bench": "python_feed", "impl": "memcpy", "bytes": nbytes, "gbps": memcpy_gbps, "repeats": args.repeats})
    met_all = True
    for name, array in arrays.items():
        feed_s = median_seconds(lambda: exe.run(program, feed={"x": array}, fetch_list=[]), args.repeats)
        gbps = nbytes / feed_s / 1e9
        emit({"bench": "python_feed", "feed": name, "dtype": str(array.dtype),
              "c_contiguous": bool(array.flags.c_contiguous), "bytes": nbytes, "gbps": gbps, "repeats": args.repeats})
        if name == "zero_copy":
            peer, peer_gbps = "memcpy", memcpy_gbps
        else:
            peer = "numpy_copy"
            peer_gbps = nbytes / median_seconds(lambda: np.ascontiguousarray(array, np.float32), args.repeats) / 1e9
            emit({"bench": "python_feed", "impl": "numpy_copy", "feed": name, "bytes": nbytes, "gbps": peer_gbps,
                  "repeats": args.repeats})
            emit({"bench": "python_feed", "feed": name, "ratio": "feed/memcpy", "value": gbps / memcpy_gbps})
        met = gbps / peer_gbps >= GOAL
        met_all = met_all and met
        emit({"bench": "python_feed", "feed": name, "ratio": f"feed/{peer}", "value": gbps / peer_gbps,
              "goal": f">= {GOAL}", "met": met})
    exe.close()
    return 0 if met_all else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
