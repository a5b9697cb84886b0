"""CIFAR-10/100 (Paddle's ``paddle.dataset.cifar``) read from a local copy of
the archives Paddle downloads, in Paddle's cache layout; nothing is
downloaded.

``train10()``/``test10()`` read ``<home>/cifar/cifar-10-python.tar.gz``,
``train100()``/``test100()`` ``<home>/cifar/cifar-100-python.tar.gz``, where
``<home>`` is ``$FLOTILLA_DATA_HOME`` when set, else Paddle's
``~/.cache/paddle/dataset``. As in Paddle, the archive's pickled batches
whose member names contain ``data_batch`` (``train`` for CIFAR-100) make the
training set and ``test_batch`` (``test``) the test set; samples are the image
as float32 [3072] scaled to [0, 1] and the label an int. A missing archive
fails at once, naming the path to put it at.

:func:`write_local_copy` writes a CIFAR-10 archive in that format from the
8x8 digits Debian's python3-sklearn ships, for tests.
"""

import io
import os
import pickle
import tarfile
from typing import Callable, Iterator, Tuple

import numpy as np

from .common import local_file

Sample = Tuple[np.ndarray, int]

CIFAR10 = "cifar-10-python.tar.gz"
CIFAR100 = "cifar-100-python.tar.gz"


def _reader(archive: str, sub_name: str, cycle: bool = False) -> Callable[[], Iterator[Sample]]:
    path = local_file("cifar", archive)

    def reader() -> Iterator[Sample]:
        while True:
            yield from _read_once()
            if not cycle:
                return

    def _read_once() -> Iterator[Sample]:
        with tarfile.open(path, mode="r") as tar:
            members = [m for m in tar.getmembers() if sub_name in m.name and m.isfile()]
            if not members:
                raise ValueError(f"paddle.dataset.cifar: {path} holds no member named like '{sub_name}'")
            for member in members:
                batch = pickle.load(tar.extractfile(member), encoding="bytes")
                data = batch[b"data"]
                labels = batch.get(b"labels", batch.get(b"fine_labels"))
                if labels is None:
                    raise ValueError(f"paddle.dataset.cifar: {path}:{member.name} has no labels")
                if len(data) != len(labels):
                    raise ValueError(f"paddle.dataset.cifar: {path}:{member.name} holds {len(data)} images "
                                     f"and {len(labels)} labels")
                for sample, label in zip(data, labels):
                    yield (np.asarray(sample, dtype=np.float32) / 255.0), int(label)
    return reader


def train10(cycle: bool = False) -> Callable[[], Iterator[Sample]]:
    """CIFAR-10 training samples (image float32 [3072] in [0, 1], label);
    with ``cycle`` the reader starts over at the end, endlessly."""
    return _reader(CIFAR10, "data_batch", cycle)


def test10(cycle: bool = False) -> Callable[[], Iterator[Sample]]:
    """CIFAR-10 test samples."""
    return _reader(CIFAR10, "test_batch", cycle)


def train100(cycle: bool = False) -> Callable[[], Iterator[Sample]]:
    """CIFAR-100 training samples (fine labels)."""
    return _reader(CIFAR100, "train", cycle)


def test100(cycle: bool = False) -> Callable[[], Iterator[Sample]]:
    """CIFAR-100 test samples (fine labels)."""
    return _reader(CIFAR100, "test", cycle)


def write_local_copy(directory: str, train_size: int = 640, test_size: int = 256) -> None:
    """Writes ``cifar-10-python.tar.gz`` into ``directory`` from sklearn's
    8x8 digits: each pixel repeated 4x4 into 32x32, the same in the three
    channels (uint8), labels the digits; one ``data_batch_1`` and one
    ``test_batch``, as CIFAR's pickles."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = np.kron(digits.images, np.ones((4, 4))) * (255.0 / 16.0)
    images = np.repeat(images[:, None], 3, axis=1).reshape(len(images), -1).round().astype(np.uint8)
    labels = [int(v) for v in digits.target]
    n = len(labels)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, CIFAR10 + ".tmp")
    with tarfile.open(tmp, mode="w:gz") as tar:
        for member, size, start in (("data_batch_1", train_size, 0), ("test_batch", test_size, n // 2)):
            idx = (start + np.arange(size)) % n
            blob = pickle.dumps({b"data": images[idx], b"labels": [labels[i] for i in idx]})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{member}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    os.replace(tmp, os.path.join(directory, CIFAR10))
