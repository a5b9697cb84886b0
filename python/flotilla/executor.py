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

    def train_from_dataset(self, program: Optional[Program] = None, dataset: Any = None,
                           scope: Optional[Scope] = None, thread: int = 0, debug: bool = False,
                           fetch_list: Optional[Sequence[FetchItem]] = None,
                           fetch_info: Optional[Sequence[str]] = None, print_period: int = 100,
                           fetch_handler: Any = None) -> None:
        """Trains ``program`` on every batch of ``dataset`` (an InMemoryDataset
        or QueueDataset) with ``thread`` Hogwild worker threads in C++ (0: the
        dataset's thread number). Each worker runs the program in a scope of
        its own over ``scope``'s shared parameters. Every ``print_period``
        batches worker 0 prints ``batch: N, <fetch_info[i]>: <value>`` for
        ``fetch_list``. ``fetch_handler`` (Paddle's ``FetchHandler``) is called
        every ``period_secs`` with its variables' values in ``scope``.
        Works in parameter-server jobs (sync, async, GEO) as ``run`` does."""
        return self._run_from_dataset(program, dataset, scope, thread, debug, fetch_list, fetch_info,
                                      print_period, fetch_handler, infer=False)

    def infer_from_dataset(self, program: Optional[Program] = None, dataset: Any = None,
                           scope: Optional[Scope] = None, thread: int = 0, debug: bool = False,
                           fetch_list: Optional[Sequence[FetchItem]] = None,
                           fetch_info: Optional[Sequence[str]] = None, print_period: int = 100,
                           fetch_handler: Any = None) -> None:
        """``train_from_dataset`` without training: the program's backward,
        optimizer and update-publishing ops are left out, so the parameters
        are only read."""
        return self._run_from_dataset(program, dataset, scope, thread, debug, fetch_list, fetch_info,
                                      print_period, fetch_handler, infer=True)

    def _run_from_dataset(self, program: Any, dataset: Any, scope: Optional[Scope], thread: int, debug: bool,
                          fetch_list: Any, fetch_info: Optional[Sequence[str]], print_period: int,
                          fetch_handler: Any, infer: bool) -> None:
        call = "infer_from_dataset" if infer else "train_from_dataset"
        if dataset is None:
            raise RuntimeError(f"Executor.{call}: dataset is needed and should be initialized")
        core_dataset = getattr(dataset, "dataset", None)
        if not isinstance(core_dataset, _core.io.Dataset):
            raise TypeError(f"Executor.{call}: dataset must be an InMemoryDataset or QueueDataset, "
                            f"got {type(dataset).__name__}")
        prog = _program_of(program)
        if scope is None:
            scope = _scope_stack[-1] if _scope_stack else global_scope()
        names = _fetch_names(fetch_list)
        info = [str(i) for i in fetch_info] if fetch_info else []
        if info and len(info) != len(names):
            raise ValueError(f"Executor.{call}: {len(info)} fetch_info label(s) for {len(names)} fetch_list "
                             "variable(s)")
        threads = int(thread) if thread and thread > 0 else int(dataset.thread_num)
        monitor = _FetchMonitor(fetch_handler, scope) if fetch_handler is not None else None
        try:
            _core.io.run_from_dataset(prog, core_dataset, scope, threads, names, info, int(print_period),
                                      bool(debug), infer)
        finally:
            if monitor is not None:
                monitor.stop()
        return None


class FetchHandler:
    """Paddle's ``fluid.executor.FetchHandler``: subclass it and override
    ``handler(res_dict)``; ``train_from_dataset(fetch_handler=...)`` calls it
    every ``period_secs`` with ``{key: value in the scope}`` for
    ``var_dict`` (``{key: Variable or name}``; None for a variable with no
    value yet)."""

    def __init__(self, var_dict: Optional[Dict[str, Any]] = None, period_secs: float = 60):
        assert var_dict is not None
        self.var_dict = var_dict
        self.period_secs = period_secs

    def handler(self, res_dict: Dict[str, Any]) -> None:
        """Prints each array's first element (Paddle's default)."""
        import sys
        for key, value in res_dict.items():
            if isinstance(value, np.ndarray):
                sys.stdout.write("{}[0]: {} ".format(key, value.reshape(-1)[0]))
        sys.stdout.write("\n")

    @staticmethod
    def help() -> None:
        print("class FetchHandlerExample(FetchHandler):\n"
              "    def handler(self, res_dict):\n"
              "        print(res_dict['auc'])\n"
              "        print('auc: {}, {}'.format(res_dict['auc'], time.ctime()))\n\n"
              "auc = Variable()\n"
              "var_dict = {'auc': auc}\n"
              "handler = FetchHandlerExample(var_dict=var_dict)\n")


class _FetchMonitor:
    """Calls ``handler.handler({name: value})`` every ``handler.period_secs``
    on a thread of its own (and once at the end) with the values its
    ``var_dict`` names in ``scope`` (Paddle's FetchHandler)."""

    def __init__(self, handler: Any, scope: Scope):
        import threading
        self._handler, self._scope = handler, scope
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _values(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for key, var in dict(getattr(self._handler, "var_dict", {}) or {}).items():
            name = var.name if isinstance(var, Variable) else str(var)
            found = self._scope.find_var(name)
            out[key] = np.array(found.get_tensor()) if found is not None and found.is_initialized() else None
        return out

    def _loop(self) -> None:
        period = float(getattr(self._handler, "period_secs", 60))
        while not self._stop.wait(period):
            self._handler.handler(self._values())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._handler.handler(self._values())


def as_numpy(value: Any) -> np.ndarray:
    """Paddle's ``fluid.executor.as_numpy``: the value as a NumPy array."""
    if isinstance(value, (list, tuple)):
        return [as_numpy(v) for v in value]
    return np.asarray(value)


__all__ = ["Executor", "FetchHandler", "as_numpy"]
