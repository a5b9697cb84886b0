"""DataFeeder (Paddle's ``fluid.DataFeeder``): a minibatch of samples → a feed dict."""

from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np

from . import _core
from .framework import Program, Variable, default_main_program


class DataFeeder:
    """Turns a list of samples (sequences with one value per feed variable)
    into ``{name: Tensor}`` with each variable's dtype and a leading batch
    dimension; ``exe.run(feed=feeder.feed(batch))`` uses them without a copy.

    Args:
        feed_list: the data Variables (or their names) in sample order.
        place: where the batch goes (the CPU).
        program: where names are looked up (default: the default main program).
    """

    def __init__(self, feed_list: Sequence[Any], place: Any = None, program: Optional[Program] = None):
        block = (program or default_main_program()).global_block()
        self._vars: List[Variable] = [v if isinstance(v, Variable) else block.var(v) for v in feed_list]
        self._feeder = _core.io.DataFeeder(self._vars)
        self._nested = [(i, v) for i, v in enumerate(self._vars) if v.lod_level > 1]

    def feed(self, iterable: Iterable[Sequence[Any]]) -> Dict[str, Any]:
        """The feed dict of one minibatch. Raises ``InvalidArgumentError``
        naming the variable and sample for a value of the wrong size. A
        variable of lod_level L > 1 takes per sample L nested lists
        (paragraphs of sentences of words for L = 2)."""
        if self._nested:
            iterable = [self._with_nested(sample) for sample in iterable]
        return self._feeder.feed(iterable)

    def _with_nested(self, sample: Sequence[Any]) -> List[Any]:
        values = list(sample)
        for i, var in self._nested:
            if i < len(values) and not isinstance(values[i], _core.Tensor):
                values[i] = _nested_tensor(values[i], var)
        return values

    @property
    def feed_names(self) -> List[str]:
        """The names of the fed variables, in sample order."""
        return list(self._feeder.feed_names)


def _nested_tensor(value: Any, var: Variable) -> "_core.Tensor":
    """One sample of a lod_level L > 1 variable (L nested lists over rows)
    as a Tensor of its rows carrying its own L - 1 levels of sequence
    lengths (for L = 2, a paragraph's sentence lengths over its words)."""
    lengths: List[List[int]] = []
    nodes = list(value)
    for _ in range(var.lod_level - 1):
        lengths.append([len(node) for node in nodes])
        nodes = [item for node in nodes for item in node]
    row_shape = [max(int(d), 1) for d in list(var.shape)[1:]]
    array = np.asarray(nodes, dtype=var.dtype).reshape([len(nodes)] + row_shape)
    tensor = _core.Tensor()
    tensor.set(array, None)
    tensor.set_recursive_sequence_lengths(lengths)
    return tensor


__all__ = ["DataFeeder"]
