"""DataLoader (Paddle's ``fluid.io.DataLoader.from_generator`` / ``PyReader``):
batches prepared by a background thread while ``exe.run`` computes (the
executor and the feeder's batching release the GIL, so the two overlap).

Iterable::

    loader = DataLoader.from_generator(feed_list=[x, y], capacity=8)
    loader.set_sample_list_generator(flotilla.batch(reader, 32))
    for data in loader():
        exe.run(main, feed=data, fetch_list=[loss])

Non-iterable (started and reset around each pass)::

    loader = DataLoader.from_generator(feed_list=[x, y], capacity=8, iterable=False)
    loader.set_sample_list_generator(train_reader)
    loader.start()
    try:
        while True:
            exe.run(main, fetch_list=[loss])        # reads the next batch
    except fluid.core.EOFException:
        loader.reset()

An exception raised by the user's reader reaches the training loop as that
exception, with the reader's own traceback and a note naming the reader.
"""

import queue
import threading
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from .data_feeder import DataFeeder
from .errors import EOFException
from .framework import Program, Variable
from .reader import put_unless_stopped

_END = object()
_started: List["GeneratorLoader"] = []  # non-iterable loaders between start() and reset()
_started_lock = threading.Lock()
_non_iterable: "weakref.WeakSet[GeneratorLoader]" = weakref.WeakSet()


class _Failure:
    def __init__(self, error: BaseException, reader: str):
        self.error = error
        self.reader = reader


def next_feed_for(program: Program) -> Dict[str, Any]:
    """The next batch of the started non-iterable loader whose variables
    ``program`` reads (one built on ``program`` first, then one whose
    variable names the program has). Raises EOFException at the end of its
    pass; returns {} when no loader applies."""
    loader = started_loader_for(program)
    if loader is not None:
        return loader._next_feed()
    for loader in list(_non_iterable):
        if loader._program_id == program._id:
            raise ValueError(f"Executor.run without feed: the DataLoader of {loader._names} was not started "
                             "(call loader.start() before the first run of each pass)")
    return {}


def started_loader_for(program: Program) -> Optional["GeneratorLoader"]:
    """The started non-iterable loader whose variables ``program`` reads
    (one built on ``program`` first, then one whose variable names the
    program has), or None."""
    with _started_lock:
        loaders = list(_started)
    block = program.global_block()
    for loader in loaders:
        if loader._program_id == program._id:
            return loader
    for loader in loaders:
        if all(block.has_var(n) for n in loader._names):
            return loader
    return None


def _name_of(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:
        name = type(fn).__qualname__ + " object"
    module = getattr(fn, "__module__", None) or getattr(type(fn), "__module__", None)
    return f"{module}.{name}" if module and module != "builtins" else name


class GeneratorLoader:
    """A loader fed by a Python generator in a background thread; see the
    module docstring. Made by :meth:`DataLoader.from_generator`."""

    def __init__(self, feed_list: Sequence[Variable], capacity: int, iterable: bool, return_list: bool,
                 drop_last: bool):
        if not feed_list:
            raise ValueError("DataLoader.from_generator: feed_list must name the data variables")
        if capacity is None or capacity <= 0:
            raise ValueError(f"DataLoader.from_generator: capacity must be positive, got {capacity}")
        self._feed_list = list(feed_list)
        self._names = [v.name for v in self._feed_list]
        self._program_id = self._feed_list[0].block.program._id
        self._capacity = capacity
        self._iterable = iterable
        self._return_list = return_list
        self._drop_last = drop_last
        self._batches: Optional[Callable[[], Iterator[Dict[str, Any]]]] = None
        self._reader_name = "<no generator set>"
        self._queue: Optional[queue.Queue] = None
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._places = 1  # batches per step of an iterable loader over several places
        if not iterable:
            _non_iterable.add(self)

    def _set_places(self, places: Any) -> None:
        if self._iterable and isinstance(places, (list, tuple)) and len(places) > 1:
            self._places = len(places)

    @property
    def iterable(self) -> bool:
        """Whether the loader is iterated (True) or read by Executor.run
        after start() (False)."""
        return self._iterable

    # ---- sources ----

    def set_sample_generator(self, reader: Callable, batch_size: int, drop_last: bool = True,
                             places: Any = None) -> "GeneratorLoader":
        """``reader()`` yields single samples; they are batched by ``batch_size``."""
        from .reader import batch
        self.set_sample_list_generator(batch(reader, batch_size, drop_last), places)
        self._reader_name = _name_of(reader)
        return self

    def set_sample_list_generator(self, reader: Callable, places: Any = None) -> "GeneratorLoader":
        """``reader()`` yields lists of samples (what ``paddle.batch`` makes)."""
        feeder = DataFeeder(self._feed_list)
        self._batches = lambda: (feeder.feed(samples) for samples in reader())
        self._reader_name = _name_of(reader)
        self._set_places(places)
        return self

    def set_batch_generator(self, reader: Callable, places: Any = None) -> "GeneratorLoader":
        """``reader()`` yields whole batches: a list/tuple of arrays in feed
        order, or a dict name → array."""
        names = self._names

        def batches() -> Iterator[Dict[str, Any]]:
            for b in reader():
                if isinstance(b, dict):
                    yield b
                    continue
                if len(b) != len(names):
                    raise ValueError(f"the batch generator yielded {len(b)} arrays for the {len(names)} "
                                     f"feed variables {names}")
                yield dict(zip(names, b))
        self._batches = batches
        self._reader_name = _name_of(reader)
        self._set_places(places)
        return self

    decorate_sample_generator = set_sample_generator
    decorate_sample_list_generator = set_sample_list_generator
    decorate_batch_generator = set_batch_generator
    decorate_paddle_reader = set_sample_list_generator
    decorate_tensor_provider = set_batch_generator

    # ---- the producer thread ----

    def _produce(self, q: queue.Queue, stop: threading.Event) -> None:
        try:
            for feed in self._batches():
                if not put_unless_stopped(q, feed, stop):
                    return
            q.put(_END)
        except BaseException as e:  # delivered to the consumer and raised there
            q.put(_Failure(e, self._reader_name))

    def _start_thread(self) -> None:
        if self._batches is None:
            raise ValueError("DataLoader: set a generator (set_sample_list_generator, set_batch_generator "
                             "or set_sample_generator) before reading")
        self._stop = threading.Event()
        self._queue = queue.Queue(maxsize=self._capacity)
        self._thread = threading.Thread(target=self._produce, args=(self._queue, self._stop),
                                        name=f"flotilla-dataloader[{self._reader_name}]", daemon=True)
        self._thread.start()

    def _take(self) -> Dict[str, Any]:
        item = self._queue.get()
        if item is _END:
            self._queue.put(_END)  # stay at the end until reset()
            raise EOFException("DataLoader: no more batches in this pass (call reset() before start())")
        if isinstance(item, _Failure):
            self._queue.put(_END)
            err = item.error
            err.add_note(f"raised by the DataLoader's reader {item.reader} (in its background thread)")
            raise err
        return item

    def _join(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        self._thread = None
        self._queue = None

    # ---- non-iterable use ----

    def start(self) -> None:
        """Starts reading a pass in the background (non-iterable loaders);
        ``exe.run`` without a feed then takes the next batch."""
        if self._iterable:
            raise ValueError("DataLoader.start() is for iterable=False loaders; iterate the loader instead")
        if self._thread is not None:
            raise ValueError("DataLoader.start(): already started; call reset() after EOFException first")
        self._start_thread()
        with _started_lock:
            _started.append(self)

    def reset(self) -> None:
        """Stops the current pass so that start() can begin the next one."""
        with _started_lock:
            if self in _started:
                _started.remove(self)
        self._join()

    def _next_feed(self) -> Dict[str, Any]:
        if self._queue is None:
            raise ValueError("Executor.run without feed: the program's DataLoader was not started "
                             "(call loader.start() first)")
        return self._take()

    # ---- iterable use ----

    def __call__(self) -> Iterator[Any]:
        return self.__iter__()

    def __iter__(self) -> Iterator[Any]:
        if not self._iterable:
            raise ValueError("DataLoader(iterable=False) is read by Executor.run after start(), not iterated")
        self._start_thread()
        try:
            while True:
                try:
                    # One batch per place; a last step with fewer is dropped, as Paddle does.
                    feeds = [self._take() for _ in range(self._places)]
                except EOFException:
                    return
                if self._return_list:
                    lists = [[f[n] for n in self._names] for f in feeds]
                    yield lists[0] if self._places == 1 else lists
                else:
                    yield feeds
        finally:
            self._join()

    def _reset(self) -> None:
        """Stops an iteration left early (Paddle's ``loader._reset()``)."""
        self._join()


class DataLoader:
    """Paddle's ``fluid.io.DataLoader`` factory."""

    @staticmethod
    def from_generator(feed_list: Optional[Sequence[Variable]] = None, capacity: Optional[int] = None,
                       use_double_buffer: bool = True, iterable: bool = True, return_list: bool = False,
                       use_multiprocess: bool = False, drop_last: bool = True) -> GeneratorLoader:
        """A loader reading a Python generator in a background thread."""
        return GeneratorLoader(feed_list or [], capacity if capacity is not None else 64, iterable,
                               return_list, drop_last)


def PyReader(feed_list: Optional[Sequence[Variable]] = None, capacity: Optional[int] = None,
             use_double_buffer: bool = True, iterable: bool = True,
             return_list: bool = False) -> GeneratorLoader:
    """Paddle 1.x ``fluid.io.PyReader``: the same loader under its older name."""
    return DataLoader.from_generator(feed_list, capacity, use_double_buffer, iterable, return_list)


def keep_data_loader_order(keep_order: bool = True) -> None:
    """Paddle's switch letting multi-place DataLoaders deliver batches out of
    order (``False``). Flotilla's loaders always keep the reader's order,
    which both settings allow, so only the argument is checked."""
    if not isinstance(keep_order, bool):
        raise TypeError(f"keep_data_loader_order: keep_order must be a bool, got {type(keep_order).__name__}")


__all__ = ["DataLoader", "PyReader", "GeneratorLoader", "next_feed_for", "started_loader_for",
           "keep_data_loader_order"]
