"""The executor (Paddle's ``fluid.Executor``): runs a program with feeds and
returns fetches as NumPy arrays.

``exe.run`` releases the GIL while the C++ core runs, feeds contiguous NumPy
arrays of the variable's dtype without copying them, raises
``InvalidArgumentError`` (a ``ValueError``) naming the variable and both
shapes for a feed of the wrong shape or dtype, and raises
``KeyboardInterrupt`` within a fraction of a second of Ctrl-C.
"""

from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _core
from .framework import Program, Scope, Variable, _scope_stack, default_main_program, global_scope
from .place import CPUPlace

FetchItem = Union[str, Variable]


class _RunSettings:
    """How ``Executor.run`` runs one program (Paddle's ExecutionStrategy):
    ``iterations`` program runs per call, temporaries dropped every
    ``drop_scope_every`` runs (0: kept)."""

    __slots__ = ("iterations", "drop_scope_every")

    def __init__(self, iterations: int, drop_scope_every: int):
        self.iterations = iterations
        self.drop_scope_every = drop_scope_every


_RUN_SETTINGS: Dict[int, _RunSettings] = {}  # by Program._id


def set_run_settings(program: Program, num_iteration_per_run: int = 1,
                     num_iteration_per_drop_scope: int = 0) -> None:
    """Makes every ``Executor.run(program)`` run it ``num_iteration_per_run``
    times (each run takes the next batch from a started DataLoader; a feed
    dict is fed to each; the fetches are the last run's) and free its
    temporaries every ``num_iteration_per_drop_scope`` runs (0: never).
    fleet applies a strategy's ``exec_strategy`` through this; so does
    ``CompiledProgram.with_data_parallel(exec_strategy=...)``."""
    for name, value, least in (("num_iteration_per_run", num_iteration_per_run, 1),
                               ("num_iteration_per_drop_scope", num_iteration_per_drop_scope, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"ExecutionStrategy.{name} must be an int of at least {least}, got {value!r}")
    if num_iteration_per_run == 1 and num_iteration_per_drop_scope == 0:
        _RUN_SETTINGS.pop(program._id, None)
    else:
        _RUN_SETTINGS[program._id] = _RunSettings(num_iteration_per_run, num_iteration_per_drop_scope)


def _fetch_names(fetch_list: Optional[Sequence[FetchItem]]) -> List[str]:
    if fetch_list is None:
        return []
    if isinstance(fetch_list, (str, Variable)):
        fetch_list = [fetch_list]
    names = []
    for item in fetch_list:
        if isinstance(item, Variable):
            names.append(item.name)
        elif isinstance(item, str):
            names.append(item)
        else:
            raise TypeError(f"Executor.run: fetch_list items must be Variables or names, got "
                            f"{type(item).__name__}")
    return names


def _program_of(program: Any) -> Program:
    if program is None:
        return default_main_program()
    if isinstance(program, Program):
        return program
    inner = getattr(program, "_program", None)  # a CompiledProgram
    if isinstance(inner, Program):
        return inner
    raise TypeError(f"Executor.run: program must be a Program, got {type(program).__name__}")


def _feed_dict(feed: Any, program: Program) -> Dict[str, Any]:
    if not feed:
        from .dataloader import next_feed_for
        return next_feed_for(program)
    if isinstance(feed, (list, tuple)) and len(feed) == 1 and isinstance(feed[0], dict):
        return feed[0]  # a DataLoader's per-place list
    if not isinstance(feed, dict):
        raise TypeError(f"Executor.run: feed must be a dict of name → array, got {type(feed).__name__}")
    return feed


def _feeds_per_place(feed: Any, program: Program, places: int) -> List[Dict[str, Any]]:
    """The feed of each place: a list of ``places`` dicts as given, a dict
    split along its batch dimension, or the next ``places`` batches of the
    program's started DataLoader (EOFException when fewer are left)."""
    if isinstance(feed, (list, tuple)):
        if len(feed) != places or not all(isinstance(f, dict) for f in feed):
            raise ValueError(f"Executor.run: {places} places take a list of {places} feed dicts, got {len(feed)}")
        return list(feed)
    if feed:
        parts: List[Dict[str, Any]] = [{} for _ in range(places)]
        for name, value in feed.items():
            array = np.asarray(value)
            if array.shape[0] % places:
                raise ValueError(f"Executor.run: feed '{name}' has {array.shape[0]} rows, which {places} places "
                                 "cannot share equally")
            for i, piece in enumerate(np.split(array, places)):
                parts[i][name] = piece
        return parts
    from .dataloader import started_loader_for
    loader = started_loader_for(program)
    if loader is None:
        return [{} for _ in range(places)]
    return [loader._next_feed() for _ in range(places)]


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
        self._runs: Dict[int, int] = {}  # runs per program with run settings
        from .distributed.fleet.paddle_flags import warn_unhonoured
        warn_unhonoured()

    def run(self, program: Optional[Program] = None, feed: Optional[Dict[str, Any]] = None,
            fetch_list: Optional[Sequence[FetchItem]] = None, feed_var_name: str = "feed",
            fetch_var_name: str = "fetch", scope: Optional[Scope] = None,
            return_numpy: bool = True, use_program_cache: bool = True,
            use_prune: bool = False) -> List[Any]:
        """Runs ``program`` (default: the default main program) once.

        Args:
            program: the program (or a CompiledProgram) to run.
            feed: ``{name: ndarray}``; without it, a started non-iterable
                DataLoader over the program's data variables supplies the
                batch and raises ``EOFException`` when it is exhausted.
            fetch_list: Variables or names whose values to return.
            scope: where persistable variables live (default: global scope).
            return_numpy: fetched values as NumPy arrays; False returns
                :class:`flotilla._core.Tensor` objects (``np.array(t)``).

        Returns:
            One value per fetched variable; arrays own their memory.
        """
        # The common case (a Program, a dict feed) touches nothing else:
        # exe.run's fixed cost is most of a small model's step.
        prog = program if type(program) is Program else _program_of(program)
        if prog is not program and program is not None:  # a CompiledProgram: bound to its scope and place
            program._compile(scope if scope is not None else global_scope(), self.place)
            if scope is None:
                scope = program._scope
            if program._place_count > 1:
                return self._run_over_places(program._place_count, prog, feed, fetch_list, scope, return_numpy)
        if _RUN_SETTINGS and prog._id in _RUN_SETTINGS:
            return self._run_with(_RUN_SETTINGS[prog._id], prog, feed, _fetch_names(fetch_list),
                                  scope if scope is not None else global_scope(), return_numpy)
        if type(feed) is not dict or not feed:
            feed = _feed_dict(feed, prog)
        if scope is None and _scope_stack:
            scope = _scope_stack[-1]
        return self._exe._run(prog, feed, fetch_list, scope, return_numpy)

    def _run_over_places(self, places: int, prog: Program, feed: Any, fetch_list: Any, scope: Scope,
                         return_numpy: bool) -> List[Any]:
        """One run per place of a program that does not train (Paddle's
        ParallelExecutor over CPU places); the fetches of the places
        concatenated along dimension 0."""
        grads = [t for t in prog.global_block().ops if str(t).endswith("_grad")]
        if grads:
            raise NotImplementedError(
                f"CompiledProgram.with_data_parallel over {places} places of one process, for a program that "
                "trains, is not in Flotilla; nearest Flotilla API: fleet.distributed_optimizer under "
                "`flotilla launch --nproc_per_node N` (one process per place)")
        feeds = _feeds_per_place(feed, prog, places)
        outs = [self._exe._run(prog, f, fetch_list, scope, True) for f in feeds]
        merged = [np.concatenate([np.atleast_1d(o[i]) for o in outs], axis=0) for i in range(len(outs[0]))]
        return merged if return_numpy else [_core.as_tensor(m) for m in merged]

    def _run_with(self, settings: _RunSettings, prog: Program, feed: Any, fetch_names: List[str],
                  scope: Scope, return_numpy: bool) -> List[Any]:
        out: List[Any] = []
        for i in range(settings.iterations):
            last = i == settings.iterations - 1
            out = self._exe._run(prog, _feed_dict(feed, prog), fetch_names if last else [], scope, return_numpy)
            runs = self._runs[prog._id] = self._runs.get(prog._id, 0) + 1
            if settings.drop_scope_every and runs % settings.drop_scope_every == 0:
                self._exe._drop_local_scope(prog, scope)
        return out

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


__all__ = ["Executor", "as_numpy", "set_run_settings"]
