"""One injected fault's verdict, and a scenario's summary of many."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional


@dataclass
class Fault:
    """What was done and how it ended. ``problems`` empty = it ended as
    required (no hang, culprit named, nothing left behind, checkpoint
    loadable)."""

    scenario: str
    index: int
    action: str                       # "kill -9 server 1", "SIGSTOP rank 0", ...
    detect_ms: Optional[float] = None  # injection → the launcher named it
    exit_ms: Optional[float] = None    # injection → every launcher that had to stop exited
    steps_lost: Optional[int] = None   # trained steps not in the last checkpoint
    problems: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def fail(self, why: str) -> None:
        """Records one way the fault did not end as required."""
        self.problems.append(why)

    def check(self, condition: bool, why: str) -> bool:
        """Records ``why`` unless ``condition``; returns ``condition``."""
        if not condition:
            self.fail(why)
        return condition


def percentile(values: List[float], q: float) -> Optional[float]:
    """The nearest-rank ``q``-th percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summary(scenario: str, faults: List[Fault], skipped: str = "") -> Dict:
    """The scenario's JSON summary line."""
    detect = [f.detect_ms for f in faults if f.detect_ms is not None]
    lost = [f.steps_lost for f in faults if f.steps_lost is not None]
    exits = [f.exit_ms for f in faults if f.exit_ms is not None]
    out: Dict = {
        "scenario": scenario,
        "faults": len(faults),
        "ok": sum(f.ok for f in faults),
        "detect_ms_p50": _round(percentile(detect, 50)),
        "detect_ms_p99": _round(percentile(detect, 99)),
        "exit_ms_max": _round(max(exits, default=None)),
        "ckpt_steps_lost_max": max(lost, default=None),
        "ckpt_steps_lost_p50": percentile([float(x) for x in lost], 50),
        "actions": _count(f.action.split(" #")[0] for f in faults),
    }
    if skipped:
        out["skipped"] = skipped
    return out


def _round(v: Optional[float]) -> Optional[float]:
    return None if v is None else round(v, 1)


def _count(items) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out
