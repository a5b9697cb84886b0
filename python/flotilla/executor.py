"""The executor (Paddle's ``fluid.Executor``): runs a program with feeds and
returns fetches as NumPy arrays.

``exe.run`` releases the GIL while the C++ core runs, feeds contiguous NumPy
arrays of the right dtype without copying them, raises
``InvalidArgumentError`` (a ``ValueError``) naming the variable for a feed of
the wrong shape or dtype, and raises ``KeyboardInterrupt`` within a fraction
of a second of Ctrl-C.
"""

from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _core
from .framework import Program, Scope, Variable, default_main_program, global_scope
from .place import CPUPlace

FetchItem = Union[str, Variable]


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
            raise TypeError(f"fetch_list items must be Variables or names, got {type(item).__name__}")
    return names


def _program_of(program: Any) -> Program:
    if program is None:
        return default_main_program()
    if isinstance(program, Program):
        return program
    inner = getattr(program, "_program", None)  # CompiledProgram
    if isinstance(inner, Program):
        return inner
    raise TypeError(f"Executor.run: program must be a Program, got {type(program).__name__}")


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

    def run(self, program: Optional[Program] = None, feed: Optional[Dict[str, Any]] = None,
            fetch_list: Optional[Sequence[FetchItem]] = None, feed_var_name: str = "feed",
            fetch_var_name: str = "fetch", scope: Optional[Scope] = None,
            return_numpy: bool = True, use_program_cache: bool = True) -> List[Any]:
        """Runs ``program`` (default: the default main program) once.

        Args:
            program: the program (or a CompiledProgram) to run.
            feed: ``{name: ndarray}``; without it, a non-iterable DataLoader
                attached to the program's data variables supplies the batch
                and raises ``EOFException`` when it is exhausted.
            fetch_list: Variables or names whose values to return.
            scope: where persistable variables live (default: global scope).
            return_numpy: fetched values as NumPy arrays (always; a False
                value returns the same arrays, which also act as tensors).

        Returns:
            One NumPy array per fetched variable, owning its memory.
        """
        prog = _program_of(program)
        if feed is None:
            from .dataloader import next_feed_for
            feed = next_feed_for(prog)
        elif isinstance(feed, list) and len(feed) == 1 and isinstance(feed[0], dict):
            feed = feed[0]  # a DataLoader's per-place list
        elif not isinstance(feed, dict):
            raise TypeError(f"Executor.run: feed must be a dict of name → array, got {type(feed).__name__}")
        return self._exe._run(prog, feed, _fetch_names(fetch_list), scope or global_scope())

    def close(self) -> None:
        """Tells every parameter server this trainer used that it has finished."""
        self._exe.close()

    def infer_from_dataset(self, *args, **kwargs):
        raise NotImplementedError(
            "Executor.infer_from_dataset (Paddle's Dataset API) is not in Flotilla; "
            "use a DataLoader and Executor.run")

    def train_from_dataset(self, *args, **kwargs):
        raise NotImplementedError(
            "Executor.train_from_dataset (Paddle's Dataset API) is not in Flotilla; "
            "use a DataLoader and Executor.run")


def as_numpy(value: Any) -> np.ndarray:
    """Paddle's ``fluid.executor.as_numpy``: the value as a NumPy array."""
    return np.asarray(value)
