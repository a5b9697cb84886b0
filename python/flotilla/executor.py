"""The executor (Paddle's ``fluid.Executor``): runs a program with feeds and
returns fetches as NumPy arrays.

``exe.run`` releases the GIL while the C++ core runs, feeds contiguous NumPy
arrays of the variable's dtype without copying them, raises
``InvalidArgumentError`` (a ``ValueError``) naming the variable and both
shapes for a feed of the wrong shape or dtype, and raises
``KeyboardInterrupt`` within a fraction of a second of Ctrl-C.

How many times one ``exe.run`` runs a program, and how often its
temporaries are freed, are the program's run settings
(``Program._run_settings``, set by an ExecutionStrategy through
``CompiledProgram.with_data_parallel`` or fleet): the C++ executor loops
over the iterations, taking each one's batch from the feed or from a
started DataLoader.
"""

from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _core
from .framework import Program, Scope, Variable, _scope_stack, default_main_program
from .place import CPUPlace

FetchItem = Union[str, Variable]


def _program_of(program: Any) -> Program:
    if program is None:
        return default_main_program()
    if isinstance(program, Program):
        return program
    inner = getattr(program, "_program", None)  # a CompiledProgram
    if isinstance(inner, Program):
        return inner
    raise TypeError(f"Executor.run: program must be a Program, got {type(program).__name__}")


def _feeds(feed: Any, program: Program) -> Union[Dict[str, Any], Callable[[], Dict[str, Any]]]:
    """The feed of every iteration (a dict), or, without one, where each
    iteration takes its batch: a started DataLoader over the program."""
    if not feed:
        from .dataloader import next_feed_for
        return lambda: next_feed_for(program)
    if isinstance(feed, (list, tuple)) and len(feed) == 1 and isinstance(feed[0], dict):
        return feed[0]  # a DataLoader's per-place list
    if not isinstance(feed, dict):
        raise TypeError(f"Executor.run: feed must be a dict of name → array, got {type(feed).__name__}")
    return feed


class Executor:
    """Runs programs (Paddle's ``Executor(place)``).

    Persistable variables (parameters) live in ``scope`` (default
    :func:`flotilla.static.global_scope`); temporaries in a scope the executor
    keeps per program, so a training loop allocates nothing after its first
    step.
    """

    def __init__(self, place: Optional[CPUPlace] = None):
        self.place = place if place is not None else CPUPlace()
        self._exe = _core.Executor()
        from .distributed.fleet.paddle_flags import warn_unhonoured
        warn_unhonoured()

    def run(self, program: Optional[Program] = None, feed: Optional[Dict[str, Any]] = None,
            fetch_list: Optional[Sequence[FetchItem]] = None, feed_var_name: str = "feed",
            fetch_var_name: str = "fetch", scope: Optional[Scope] = None,
            return_numpy: bool = True, use_program_cache: bool = True,
            use_prune: bool = False) -> List[Any]:
        """Runs ``program`` (default: the default main program): once, or as
        many times as its run settings say (``num_iteration_per_run``).

        Args:
            program: the program (or a CompiledProgram) to run.
            feed: ``{name: ndarray}``; without it, a started non-iterable
                DataLoader over the program's data variables supplies the
                batch (one per iteration) and raises ``EOFException`` when it
                is exhausted.
            fetch_list: Variables or names whose values to return.
            scope: where persistable variables live (default: global scope).
            return_numpy: fetched values as NumPy arrays; False returns
                :class:`flotilla._core.Tensor` objects (``np.array(t)``).

        Returns:
            One value per fetched variable, of the last iteration; arrays
            own their memory.
        """
        # The common case (a Program, a dict feed) touches nothing else:
        # exe.run's fixed cost is most of a small model's step.
        prog = program if type(program) is Program else _program_of(program)
        if type(feed) is not dict or not feed:
            feed = _feeds(feed, prog)
        if scope is None and _scope_stack:
            scope = _scope_stack[-1]
        return self._exe._run(prog, feed, fetch_list, scope, return_numpy)

    def close(self) -> None:
        """Tells every parameter server this trainer used that it has finished
        (call it on every trainer when training ends, as Paddle requires)."""
        self._exe.close()

    def infer_from_dataset(self, *args: Any, **kwargs: Any) -> None:
        """Not in Flotilla (Paddle's Dataset API)."""
        raise NotImplementedError(
            "Executor.infer_from_dataset (Paddle's Dataset API) is not in Flotilla yet; nearest: Executor.run "
            "fed with the dataset's batches (dataset.dataset.feed(i)) or a DataLoader")

    def train_from_dataset(self, *args: Any, **kwargs: Any) -> None:
        """Not in Flotilla (Paddle's Dataset API)."""
        raise NotImplementedError(
            "Executor.train_from_dataset (Paddle's Dataset API) is not in Flotilla yet; nearest: Executor.run "
            "fed with the dataset's batches (dataset.dataset.feed(i)) or a DataLoader")


def as_numpy(value: Any) -> np.ndarray:
    """Paddle's ``fluid.executor.as_numpy``: the value as a NumPy array."""
    if isinstance(value, (list, tuple)):
        return [as_numpy(v) for v in value]
    return np.asarray(value)


__all__ = ["Executor", "as_numpy"]
