"""MNIST (Paddle's ``paddle.dataset.mnist``) read from a local copy in
Paddle's cache layout; nothing is downloaded.

The four idx files Paddle downloads (``train-images-idx3-ubyte.gz``,
``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
``t10k-labels-idx1-ubyte.gz``) are read from ``<home>/mnist/``, where
``<home>`` is ``$FLOTILLA_DATA_HOME`` when set, else Paddle's
``~/.cache/paddle/dataset``. Samples are as Paddle's: the image as float32
[784] scaled to [-1, 1], the label an int. A missing file fails at once,
naming the path to put it at.

:func:`write_local_copy` writes files in that format from the 8x8 digits
Debian's python3-sklearn ships (upscaled to 28x28), for tests.
"""

import gzip
import os
import struct
from typing import Callable, Iterator, Tuple

import numpy as np

from .common import local_file

Sample = Tuple[np.ndarray, int]

TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"
_IMAGE_MAGIC = 2051
_LABEL_MAGIC = 2049


def _read_idx(path: str, magic: int) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = 3 if magic == _IMAGE_MAGIC else 1
    header = 4 * (1 + ndim)
    if len(data) < header:
        raise ValueError(f"paddle.dataset.mnist: {path} is too short for an idx header")
    fields = struct.unpack_from(f">{1 + ndim}I", data)
    if fields[0] != magic:
        raise ValueError(f"paddle.dataset.mnist: {path} has magic number {fields[0]}, expected {magic}")
    shape = fields[1:]
    count = int(np.prod(shape))
    if len(data) - header != count:
        raise ValueError(f"paddle.dataset.mnist: {path} holds {len(data) - header} bytes of data, "
                         f"its header says {count}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def _reader(image_name: str, label_name: str) -> Callable[[], Iterator[Sample]]:
    image_path, label_path = local_file("mnist", image_name), local_file("mnist", label_name)

    def reader() -> Iterator[Sample]:
        images = _read_idx(image_path, _IMAGE_MAGIC)
        labels = _read_idx(label_path, _LABEL_MAGIC)
        if len(images) != len(labels):
            raise ValueError(f"paddle.dataset.mnist: {image_path} holds {len(images)} images but "
                             f"{label_path} {len(labels)} labels")
        flat = images.reshape(len(images), -1).astype(np.float32) / 255.0 * 2.0 - 1.0
        for i in range(len(labels)):
            yield flat[i], int(labels[i])
    return reader


def train() -> Callable[[], Iterator[Sample]]:
    """A reader of the training samples (image float32 [784] in [-1, 1], label)."""
    return _reader(TRAIN_IMAGES, TRAIN_LABELS)


def test() -> Callable[[], Iterator[Sample]]:
    """A reader of the test samples."""
    return _reader(TEST_IMAGES, TEST_LABELS)


def _write_idx(path: str, array: np.ndarray, magic: int) -> None:
    tmp = path + ".tmp"
    with gzip.open(tmp, "wb") as f:
        f.write(struct.pack(f">{1 + array.ndim}I", magic, *array.shape))
        f.write(np.ascontiguousarray(array, dtype=np.uint8).tobytes())
    os.replace(tmp, path)


def write_local_copy(directory: str, train_size: int = 2000, test_size: int = 500) -> None:
    """Writes the four MNIST idx files into ``directory`` from sklearn's 8x8
    digits, each pixel repeated 3x3 into a 24x24 image centred in 28x28
    (values 0..255); samples are repeated to reach the sizes asked for."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = np.kron(digits.images, np.ones((3, 3))) * (255.0 / 16.0)
    images = np.pad(images, ((0, 0), (2, 2), (2, 2))).round().astype(np.uint8)
    labels = digits.target.astype(np.uint8)
    os.makedirs(directory, exist_ok=True)
    n = len(labels)
    for (img_name, lab_name), size, start in (((TRAIN_IMAGES, TRAIN_LABELS), train_size, 0),
                                              ((TEST_IMAGES, TEST_LABELS), test_size, n // 2)):
        idx = (start + np.arange(size)) % n
        _write_idx(os.path.join(directory, img_name), images[idx], _IMAGE_MAGIC)
        _write_idx(os.path.join(directory, lab_name), labels[idx], _LABEL_MAGIC)
