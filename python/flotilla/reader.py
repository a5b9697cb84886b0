"""Reader decorators (Paddle's ``paddle.reader``): a reader is a function that
returns an iterable of samples."""

import random
from typing import Callable, Iterable, Iterator, List, Optional

Reader = Callable[[], Iterable]


def shuffle(reader: Reader, buf_size: int, seed: Optional[int] = None) -> Reader:
    """Shuffles samples within a window of ``buf_size``."""
    if buf_size <= 0:
        raise ValueError(f"reader.shuffle: buf_size must be positive, got {buf_size}")

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


def buffered(reader: Reader, size: int) -> Reader:
    """Paddle's ``reader.buffered``: here the samples pass through unchanged
    (DataLoader does the prefetching)."""
    return reader


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
