"""Reader decorators (Paddle's ``paddle.reader``): a reader is a function that
returns an iterable of samples. They combine Python generators, so they are
Python; the core's own readers (``flotilla._core.io``) do the same for data
the core reads."""

import itertools
import multiprocessing
import multiprocessing.connection
import queue
import random
import subprocess
import threading
import zlib
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence

Reader = Callable[[], Iterable]


def shuffle(reader: Reader, buf_size: int, seed: Optional[int] = None) -> Reader:
    """Shuffles samples within a window of ``buf_size`` (0 or 1: the order
    is kept, as in Paddle)."""
    if buf_size < 0:
        raise ValueError(f"reader.shuffle: buf_size must not be negative, got {buf_size}")

    def shuffled() -> Iterator:
        rng = random.Random(seed)
        buf: List = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                rng.shuffle(buf)
                yield from buf
                buf = []
        rng.shuffle(buf)
        yield from buf
    return shuffled


def batch(reader: Reader, batch_size: int, drop_last: bool = False) -> Reader:
    """Groups samples into lists of ``batch_size`` (Paddle's ``paddle.batch``)."""
    if batch_size <= 0:
        raise ValueError(f"batch: batch_size must be positive, got {batch_size}")

    def batched() -> Iterator[List]:
        b: List = []
        for sample in reader():
            b.append(sample)
            if len(b) == batch_size:
                yield b
                b = []
        if b and not drop_last:
            yield b
    return batched


_END = object()


def put_unless_stopped(q: queue.Queue, item: Any, stop: threading.Event) -> bool:
    """Puts ``item`` into the bounded queue ``q``, waiting for room until
    ``stop`` is set; False when it was set first (the consumer left)."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


class _Raised:
    def __init__(self, error: BaseException):
        self.error = error


def buffered(reader: Reader, size: int) -> Reader:
    """Reads ahead: a background thread keeps up to ``size`` samples of
    ``reader`` in a queue while the consumer works. An exception of the
    reader is raised to the consumer after the samples read before it."""
    def read_ahead() -> Iterator:
        q: queue.Queue = queue.Queue(maxsize=max(int(size), 1))
        stop = threading.Event()

        def fill() -> None:
            try:
                for sample in reader():
                    if not put_unless_stopped(q, sample, stop):
                        return
                q.put(_END)
            except BaseException as e:  # handed to the consumer
                q.put(_Raised(e))
        thread = threading.Thread(target=fill, name="paddle.reader.buffered", daemon=True)
        thread.start()
        try:
            while True:
                item = q.get()
                if item is _END:
                    return
                if isinstance(item, _Raised):
                    raise item.error
                yield item
        finally:
            stop.set()
            thread.join()
    return read_ahead


def firstn(reader: Reader, n: int) -> Reader:
    """The first ``n`` samples."""
    def first() -> Iterator:
        for i, sample in enumerate(reader()):
            if i >= n:
                return
            yield sample
    return first


def chain(*readers: Reader) -> Reader:
    """The samples of each reader in turn."""
    def chained() -> Iterator:
        for r in readers:
            yield from r()
    return chained


def map_readers(func: Callable, *readers: Reader) -> Reader:
    """``func(a, b, ...)`` of the samples the readers yield together."""
    def mapped() -> Iterator:
        for items in zip(*[r() for r in readers]):
            yield func(*items)
    return mapped


class ComposeNotAligned(ValueError):
    """compose(): the readers yielded different numbers of samples."""


def compose(*readers: Reader, check_alignment: bool = True) -> Reader:
    """Samples of the readers side by side, flattened into one tuple
    (``(1, (2, 3))`` → ``(1, 2, 3)``). With ``check_alignment``, readers of
    different lengths raise ComposeNotAligned when the shortest ends;
    without it, the longer ones are cut."""
    def as_tuple(x: Any) -> tuple:
        return x if isinstance(x, tuple) else (x,)

    def composed() -> Iterator[tuple]:
        its = [r() for r in readers]
        if not check_alignment:
            for outputs in zip(*its):
                yield sum(map(as_tuple, outputs), ())
            return
        missing = object()
        for outputs in itertools.zip_longest(*its, fillvalue=missing):
            if any(o is missing for o in outputs):
                raise ComposeNotAligned("outputs of readers are not aligned.")
            yield sum(map(as_tuple, outputs), ())
    return composed


def xmap_readers(mapper: Callable, reader: Reader, process_num: int, buffer_size: int,
                 order: bool = False) -> Reader:
    """``mapper`` applied to the samples by ``process_num`` threads, through
    queues of ``buffer_size``; ``order`` keeps the reader's order."""
    if process_num < 1 or buffer_size < 1:
        raise ValueError(f"xmap_readers: process_num and buffer_size must be positive, got {process_num} "
                         f"and {buffer_size}")

    def xmapped() -> Iterator:
        in_q: queue.Queue = queue.Queue(buffer_size)
        out_q: queue.Queue = queue.Queue(buffer_size)

        def feed() -> None:
            try:
                for i, sample in enumerate(reader()):
                    in_q.put((i, sample))
            except BaseException as e:
                out_q.put(_Raised(e))
            for _ in range(process_num):
                in_q.put(_END)

        def work() -> None:
            while True:
                item = in_q.get()
                if item is _END:
                    out_q.put(_END)
                    return
                i, sample = item
                try:
                    out_q.put((i, mapper(sample)))
                except BaseException as e:
                    out_q.put(_Raised(e))
        threads = [threading.Thread(target=feed, daemon=True)]
        threads += [threading.Thread(target=work, daemon=True) for _ in range(process_num)]
        for t in threads:
            t.start()
        finished, pending, next_index = 0, {}, 0
        while finished < process_num:
            item = out_q.get()
            if item is _END:
                finished += 1
                continue
            if isinstance(item, _Raised):
                raise item.error
            i, value = item
            if not order:
                yield value
                continue
            pending[i] = value
            while next_index in pending:
                yield pending.pop(next_index)
                next_index += 1
        for t in threads:
            t.join()
    return xmapped


class PipeReader:
    """Lines of a shell command's output (``cat file``, ``hadoop fs -cat
    ...``), read ``bufsize`` bytes at a time; ``file_type`` "gzip" inflates
    the stream first."""

    def __init__(self, command: str, bufsize: int = 8192, file_type: str = "plain"):
        if not isinstance(command, str):
            raise TypeError("PipeReader: command must be a str")
        if file_type not in ("plain", "gzip"):
            raise TypeError(f"PipeReader: file_type {file_type!r} is not 'plain' or 'gzip'")
        self.command, self.bufsize, self.file_type = command, bufsize, file_type
        self.process = subprocess.Popen(command.split(" "), bufsize=bufsize, stdout=subprocess.PIPE)
        self.decomp = zlib.decompressobj(32 + zlib.MAX_WBITS) if file_type == "gzip" else None

    def get_line(self, cut_lines: bool = True, line_break: str = "\n") -> Iterator[str]:
        """The output's lines without ``line_break`` (``cut_lines``), else its chunks."""
        remained = ""
        try:
            while True:
                buff = self.process.stdout.read(self.bufsize)
                if not buff:
                    break
                text = (self.decomp.decompress(buff) if self.decomp else buff).decode("utf-8")
                if not cut_lines:
                    yield text
                    continue
                lines = (remained + text).split(line_break)
                remained = lines.pop()
                yield from lines
            if cut_lines and remained:
                yield remained
        finally:
            self.process.stdout.close()
            self.process.wait()


def _pump(reader: Reader, out: Any, use_pipe: bool) -> None:
    try:
        for sample in reader():
            if sample is None:
                raise ValueError("multiprocess_reader: a sample is None")
            out.send(sample) if use_pipe else out.put(sample)
        out.send(None) if use_pipe else out.put(None)
    except BaseException as e:  # the parent raises it
        message = ("raised", f"{type(e).__name__}: {e}")
        out.send(message) if use_pipe else out.put(message)


def multiprocess_reader(readers: Sequence[Reader], use_pipe: bool = True, queue_size: int = 1000) -> Reader:
    """The samples of ``readers``, each read in a forked process, merged in
    arrival order through pipes (``use_pipe``) or one queue of
    ``queue_size``. Every process is joined before the pass ends."""
    def merged() -> Iterator:
        ctx = multiprocessing.get_context("fork")
        procs, ends = [], []
        q = None if use_pipe else ctx.Queue(max(int(queue_size), 1))
        for r in readers:
            if use_pipe:
                parent, child = ctx.Pipe(duplex=False)
                p = ctx.Process(target=_pump, args=(r, child, True), daemon=True)
                ends.append(parent)
            else:
                p = ctx.Process(target=_pump, args=(r, q, False), daemon=True)
            p.start()
            procs.append(p)
        try:
            done = 0
            live = list(ends)
            while done < len(readers):
                if use_pipe:
                    for conn in multiprocessing.connection.wait(live):
                        sample = conn.recv()
                        if sample is None:
                            done += 1
                            live.remove(conn)
                        elif isinstance(sample, tuple) and sample[:1] == ("raised",):
                            raise RuntimeError(f"multiprocess_reader: a reader failed: {sample[1]}")
                        else:
                            yield sample
                else:
                    sample = q.get()
                    if sample is None:
                        done += 1
                    elif isinstance(sample, tuple) and sample[:1] == ("raised",):
                        raise RuntimeError(f"multiprocess_reader: a reader failed: {sample[1]}")
                    else:
                        yield sample
        finally:
            for p in procs:
                p.join(timeout=5)
                if p.is_alive():
                    p.terminate()
                    p.join()
    return merged


def fake(reader: Reader, data_num: int) -> Reader:
    """The reader's first sample, ``data_num`` times (for speed tests)."""
    def faked() -> Iterator:
        first = next(iter(reader()))
        for _ in range(data_num):
            yield first
    return faked


def cache(reader: Reader) -> Reader:
    """All the reader's samples read once into memory, then served from there."""
    samples = list(reader())

    def cached() -> Iterator:
        yield from samples
    return cached


__all__ = ["shuffle", "batch", "buffered", "firstn", "chain", "map_readers", "compose", "ComposeNotAligned",
           "xmap_readers", "PipeReader", "multiprocess_reader", "fake", "cache"]
