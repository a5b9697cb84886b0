"""``fleet.util`` (Paddle 2.x's UtilBase): collectives on host values between
the trainers of a collective job — summing a validation metric over every
rank's shard, gathering per-rank counts. Each call blocks (GIL released,
Ctrl-C raises KeyboardInterrupt) until every trainer has made it; with one
trainer it returns the value itself."""

from typing import Any, List

import numpy as np

from ... import _core

_U = _core.fleet_util


def _check_world(comm_world: str, what: str) -> None:
    if comm_world != "worker":
        raise NotImplementedError(f"fleet.util.{what}(comm_world={comm_world!r}): Flotilla's collective jobs have "
                                  "trainers only; nearest: comm_world='worker'")


class UtilBase:
    """What ``fleet.util`` is."""

    def all_reduce(self, input: Any, mode: str = "sum", comm_world: str = "worker") -> np.ndarray:
        """``input`` (an array, list or number) reduced element-wise over
        every trainer with ``mode`` "sum", "max" or "min"; a new array."""
        _check_world(comm_world, "all_reduce")
        return _U.all_reduce(input, mode)

    def all_gather(self, input: Any, comm_world: str = "worker") -> List[Any]:
        """Every trainer's ``input``, in rank order."""
        _check_world(comm_world, "all_gather")
        value = np.asarray(input)
        gathered = _U.all_gather(value)
        parts = gathered.reshape((-1,) + value.shape)
        return [p.item() if value.ndim == 0 else p for p in parts]

    def barrier(self, comm_world: str = "worker") -> None:
        """Blocks until every trainer calls it."""
        _check_world(comm_world, "barrier")
        _U.all_reduce(np.zeros(1, np.int32), "sum")


util = UtilBase()

__all__ = ["UtilBase", "util"]
