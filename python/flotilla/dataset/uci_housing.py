"""UCI housing (Paddle's ``paddle.dataset.uci_housing``): 13 normalised
features and the price, split 80/20 as Paddle does. Read by the C++ core from
the copy Debian's scikit-learn ships; nothing is downloaded."""

from typing import Callable, Iterator, Tuple

import numpy as np

from .. import _core

Sample = Tuple[np.ndarray, np.ndarray]


def train() -> Callable[[], Iterator[Sample]]:
    """A reader of the training samples (features[13], price[1]), float32."""
    return lambda: iter(_core.io.uci_housing_train())


def test() -> Callable[[], Iterator[Sample]]:
    """A reader of the test samples."""
    return lambda: iter(_core.io.uci_housing_test())
