"""Paddle's entry attributes for ``sparse_embedding``: how a parameter-server
sparse table admits a new id (``paddle.distributed.ProbabilityEntry``,
``CountFilterEntry``, ``ShowClickEntry``)."""


class EntryAttr:
    """Base of the entry attributes; ``_to_attr()`` is Paddle's string form."""

    def __init__(self) -> None:
        self._name = ""

    def _to_attr(self) -> str:
        raise NotImplementedError("EntryAttr is a base class; use ProbabilityEntry, CountFilterEntry or "
                                  "ShowClickEntry")


class ProbabilityEntry(EntryAttr):
    """Admits a new id with probability ``probability``."""

    def __init__(self, probability: float) -> None:
        super().__init__()
        if not isinstance(probability, float):
            raise ValueError("probability must be a float in (0,1)")
        if probability <= 0 or probability >= 1:
            raise ValueError("probability must be a float in (0,1)")
        self._name = "probability_entry"
        self._probability = probability

    def _to_attr(self) -> str:
        return ":".join([self._name, str(self._probability)])


class CountFilterEntry(EntryAttr):
    """Admits an id once it was seen ``count_filter`` times."""

    def __init__(self, count_filter: int) -> None:
        super().__init__()
        if not isinstance(count_filter, int):
            raise ValueError("count_filter must be a valid integer greater than 0")
        if count_filter < 0:
            raise ValueError("count_filter must be a valid integer greater or equal than 0")
        self._name = "count_filter_entry"
        self._count_filter = count_filter

    def _to_attr(self) -> str:
        return ":".join([self._name, str(self._count_filter)])


class ShowClickEntry(EntryAttr):
    """Names the show and click variables whose counts Paddle's CTR accessor
    keeps per row. Every id gets a row at its first lookup, as in Paddle."""

    def __init__(self, show_name: str, click_name: str) -> None:
        super().__init__()
        if not isinstance(show_name, str) or not isinstance(click_name, str):
            raise ValueError("show_name click_name must be a str")
        self._name = "show_click_entry"
        self._show_name = show_name
        self._click_name = click_name

    def _to_attr(self) -> str:
        return ":".join([self._name, self._show_name, self._click_name])


__all__ = ["EntryAttr", "ProbabilityEntry", "CountFilterEntry", "ShowClickEntry"]
