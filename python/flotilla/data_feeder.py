"""DataFeeder (Paddle's ``fluid.DataFeeder``): a minibatch of samples → a feed dict."""

from typing import Any, Dict, Iterable, List, Optional, Sequence

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

    def feed(self, iterable: Iterable[Sequence[Any]]) -> Dict[str, Any]:
        """The feed dict of one minibatch. Raises ``InvalidArgumentError``
        naming the variable and sample for a value of the wrong size."""
        return self._feeder.feed(iterable)

    @property
    def feed_names(self) -> List[str]:
        """The names of the fed variables, in sample order."""
        return list(self._feeder.feed_names)


__all__ = ["DataFeeder"]
