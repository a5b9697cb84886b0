"""``fleet.util`` (Paddle 2.x's UtilBase, in Paddle's module
``fleet.base.util_factory``): collectives on host values between
the trainers of a collective job — summing a validation metric over every
rank's shard, gathering per-rank counts — and the trainer's share of a file
list. Each collective blocks (GIL released, Ctrl-C raises
KeyboardInterrupt) until every trainer has made it; with one trainer it
returns the value itself. The workers of a parameter-server job share no
process group: there the collectives raise NotImplementedError.

``fleet.init`` hands its role maker to the current util; ``fleet.set_util``
replaces the util with a user's subclass, as in Paddle."""

import sys
from typing import Any, List, Optional

import numpy as np

from .... import _core

_U = _core.fleet_util


def _check_world(comm_world: str, what: str) -> None:
    if comm_world not in ("worker", "server", "all"):
        raise ValueError(f"argument error, comm_world must in ['worker', 'server', 'all'], got {comm_world!r}")
    if comm_world != "worker":
        raise NotImplementedError(f"fleet.util.{what}(comm_world={comm_world!r}): Flotilla's collectives on host "
                                  "values run between trainers only; nearest: comm_world='worker'")


def all_reduce(input: Any, mode: str = "sum", comm_world: str = "worker") -> np.ndarray:
    """``input`` (an array, list or number) reduced element-wise over every
    trainer of the fleet with ``mode`` "sum", "max" or "min"; a new array."""
    _check_world(comm_world, "all_reduce")
    return _U.all_reduce(input, mode)


def all_gather(input: Any, comm_world: str = "worker") -> List[Any]:
    """Every trainer's ``input``, in rank order."""
    _check_world(comm_world, "all_gather")
    value = np.asarray(input)
    parts = _U.all_gather(value).reshape((-1,) + value.shape)
    return [p.item() if value.ndim == 0 else p for p in parts]


def barrier(comm_world: str = "worker") -> None:
    """Blocks until every trainer of the fleet calls it."""
    _check_world(comm_world, "barrier")
    _U.all_reduce(np.zeros(1, np.int32), "sum")


class UtilBase:
    """What ``fleet.util`` is. ``role_maker`` is the role ``fleet.init`` took
    (None before it)."""

    def __init__(self) -> None:
        self.role_maker: Any = None
        self.dist_strategy: Any = None
        self.fs_client: Any = None

    def _set_strategy(self, dist_strategy: Any) -> None:
        self.dist_strategy = dist_strategy

    def _set_role_maker(self, role_maker: Any) -> None:
        self.role_maker = role_maker

    def _set_file_system(self, fs_client: Any) -> None:
        self.fs_client = fs_client

    def _role(self) -> Any:
        if self.role_maker is None:
            raise ValueError("fleet.util: call fleet.init(...) first (it gives fleet.util the job's role)")
        return self.role_maker

    def all_reduce(self, input: Any, mode: str = "sum", comm_world: str = "worker") -> np.ndarray:
        """``input`` (an array, list or number) reduced element-wise over
        every trainer with ``mode`` "sum", "max" or "min"; a new array."""
        return all_reduce(input, mode, comm_world)

    def all_gather(self, input: Any, comm_world: str = "worker") -> List[Any]:
        """Every trainer's ``input``, in rank order."""
        return all_gather(input, comm_world)

    def barrier(self, comm_world: str = "worker") -> None:
        """Blocks until every trainer calls it."""
        barrier(comm_world)

    def get_file_shard(self, files: List[str]) -> List[str]:
        """This trainer's share of ``files``: the list cut into one
        contiguous block per trainer, the first ``len(files) % trainers``
        blocks one file longer (5 files, 2 trainers: 3 and 2)."""
        if not isinstance(files, list):
            raise TypeError("files should be a list of file need to be read.")
        role = self._role()
        return list(_core.fleet.file_shard(files, role._worker_index(), role._worker_num()))

    def print_on_rank(self, message: Any, rank_id: int) -> None:
        """Prints ``message`` on the trainer of rank ``rank_id`` only."""
        if self._role()._worker_index() == rank_id:
            print(message)


class UtilFactory:
    """Paddle's factory of utils (``fleet.base.util_factory``)."""

    def _create_util(self, context: Optional[dict] = None) -> UtilBase:
        util = UtilBase()
        if context is not None and "valid_strategy" in context:
            util._set_strategy(context["valid_strategy"])
        if context is not None and "role_maker" in context:
            util._set_role_maker(context["role_maker"])
        return util


_FLEET_PACKAGE = __name__.rsplit(".", 2)[0]  # flotilla.distributed.fleet


def current() -> UtilBase:
    """The util ``fleet.util`` names now."""
    return sys.modules[_FLEET_PACKAGE].util


def set_util(new: UtilBase) -> None:
    """Makes ``new`` (a UtilBase, e.g. a user's subclass) ``fleet.util``,
    with the role and strategy of the last ``fleet.init``."""
    if not isinstance(new, UtilBase):
        raise TypeError(f"fleet.set_util: expected a fleet.UtilBase, got {type(new).__name__}")
    old = current()
    if new.role_maker is None:
        new._set_role_maker(old.role_maker)
        new._set_strategy(old.dist_strategy)
    sys.modules[_FLEET_PACKAGE].util = new


__all__ = ["UtilBase", "UtilFactory", "current", "set_util", "all_reduce", "all_gather", "barrier"]
