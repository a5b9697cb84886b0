"""DataFeeder (Paddle's ``fluid.DataFeeder``): a minibatch of samples → a feed dict."""

from typing import Any, Dict, Iterable, Optional, Sequence

import numpy as np

from . import _core
from .framework import Program, Variable, default_main_program


class DataFeeder:
    """Turns a list of samples (tuples with one value per feed variable) into
    ``{name: batch array}`` of each variable's dtype and shape.

    Args:
        feed_list: the data Variables (or their names) in sample order.
        place: ignored (CPU).
        program: where names are looked up (default: the default main program).
    """

    def __init__(self, feed_list: Sequence[Any], place: Any = None, program: Optional[Program] = None):
        self._program = program or default_main_program()
        block = self._program.global_block()
        self._vars = [v if isinstance(v, Variable) else block.var(v) for v in feed_list]
        self._feeder = _core.io.DataFeeder(self._vars)

    def feed(self, iterable: Iterable[Sequence[Any]]) -> Dict[str, np.ndarray]:
        """The feed dict of one minibatch."""
        return self._feeder.feed(self._vars[0].block.program, list(iterable))

    @property
    def feed_names(self):
        return list(self._feeder.feed_names)
