"""The ImageNet-layout reader of Paddle's image-classification scripts:
``data_dir/train_list.txt`` and ``val_list.txt`` with ``relative/path.jpeg
label`` lines. JPEGs are decoded (libjpeg-turbo) and augmented on C++
worker threads, ``prefetch`` batches ahead, so the training loop waits only
when decoding is the slower of the two."""

from typing import Iterator, Optional, Sequence, Tuple

import numpy as np

from .. import _core

# The C++ reader's defaults (0.485f * 255, ..., computed in float32): the
# same bits whether a reader is made from Python or from C++.
_IMAGENET_MEAN = tuple(_core.vision.IMAGENET_MEAN)
_IMAGENET_STD = tuple(_core.vision.IMAGENET_STD)


class ImageNetReader:
    """Batches of ``(image [N, 3, S, S] float32, label [N, 1] int64)`` NumPy arrays.

    Training (``train=True``): random-resized crop (area fraction from
    ``lower_scale``) and horizontal flip; evaluation: resize the short side
    to ``resize_short``, centre crop. Data-parallel: ``rank`` of ``nranks``
    reads its own shard (``even_shards``: every rank the same number of
    samples, so ranks step in lockstep; else every sample exactly once).
    Randomness is seeded per (seed, epoch, sample). A bad image is skipped
    with a warning naming it (``skip_bad_images``) or raises
    ``CorruptionError`` naming it; a malformed list line raises
    ``InvalidArgumentError`` naming the file and line.
    """

    def __init__(self, data_dir: str, list_file: str = "train_list.txt", train: bool = True, image_size: int = 224,
                 resize_short: int = 256, lower_scale: float = 0.08, flip: bool = True,
                 mean: Sequence[float] = _IMAGENET_MEAN, std: Sequence[float] = _IMAGENET_STD, batch_size: int = 32,
                 num_workers: int = 2, prefetch: int = 4, rank: int = 0, nranks: int = 1,
                 shuffle: Optional[bool] = None, seed: int = 0, skip_bad_images: bool = True,
                 drop_last: Optional[bool] = None, even_shards: Optional[bool] = None):
        options = dict(data_dir=data_dir, list=list_file, train=train, image_size=image_size,
                       resize_short=resize_short, lower_scale=lower_scale, flip=flip, mean=list(mean),
                       std=list(std), batch_size=batch_size, num_workers=num_workers, prefetch=prefetch, rank=rank,
                       nranks=nranks, shuffle=train if shuffle is None else shuffle, seed=seed,
                       skip_bad_images=skip_bad_images, drop_last=train if drop_last is None else drop_last,
                       even_shards=train if even_shards is None else even_shards)
        self._reader = _core.vision.ImageNetReader(options)

    @property
    def size(self) -> int:
        """Samples in the list (all ranks)."""
        return self._reader.size

    @property
    def num_classes(self) -> int:
        """Largest label + 1."""
        return self._reader.num_classes

    def __len__(self) -> int:
        """Batches this rank reads per epoch."""
        return self._reader.batches_per_epoch

    def epoch(self, epoch: int = 0) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
        """The batches of epoch ``epoch`` (a new order each epoch when shuffling)."""
        self._reader.start_epoch(int(epoch))
        while True:
            batch = self._reader.next()
            if batch is None:
                return
            yield batch[0], batch[1]

    def __iter__(self) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
        return self.epoch(0)
