"""DataGenerator and its two MultiSlot formats (see the package docstring).

The text format, one line per sample: for each slot in order, the number of
feasigns then the feasigns, all separated by single spaces, ending in "\\n":
``[("words", [1926, 8, 17]), ("label", [1])]`` → ``"3 1926 8 17 1 1\\n"``.
"""

import sys
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

Sample = Sequence[Tuple[str, list]]


class DataGenerator:
    """Base class: subclasses override ``generate_sample`` (and optionally
    ``generate_batch``); ``_gen_str`` is the output format."""

    def __init__(self) -> None:
        self._proto_info: Optional[List[Tuple[str, str]]] = None
        self.batch_size_ = 32

    def set_batch(self, batch_size: int) -> None:
        """How many samples ``generate_batch`` receives at a time."""
        self.batch_size_ = batch_size

    def run_from_memory(self) -> None:
        """Writes the samples of ``generate_sample(None)`` to stdout."""
        self._write_samples(self.generate_sample(None)())

    def run_from_stdin(self) -> None:
        """Writes the samples of ``generate_sample(line)`` for every line of
        stdin to stdout, batched through ``generate_batch``."""
        self._write_samples(s for line in sys.stdin for s in self.generate_sample(line)())

    def _write_samples(self, samples: Iterable[Any]) -> None:
        batch: List[Any] = []
        for sample in samples:
            if sample is None:
                continue
            batch.append(sample)
            if len(batch) == self.batch_size_:
                self._write_batch(batch)
                batch = []
        if batch:
            self._write_batch(batch)

    def _write_batch(self, batch: List[Any]) -> None:
        out = sys.stdout
        for sample in self.generate_batch(batch)():
            out.write(self._gen_str(sample))

    def _gen_str(self, line: Any) -> str:
        raise NotImplementedError("pls use MultiSlotDataGenerator or PairWiseDataGenerator")

    def generate_sample(self, line: Optional[str]) -> Callable[[], Iterable[Any]]:
        """Override: returns a function yielding samples, each
        ``[(name, [feasign, ...]), ...]`` (or a tuple of such pairs)."""
        raise NotImplementedError("Please rewrite this function to return a list or tuple: "
                                  "[(name, [feasign, ...]), ...] or ((name, [feasign, ...]), ...)")

    def generate_batch(self, samples: List[Any]) -> Callable[[], Iterable[Any]]:
        """Override to process a batch of samples (e.g. padding); by default
        yields them unchanged."""
        def local_iter() -> Iterable[Any]:
            yield from samples
        return local_iter


def _as_sequence(line: Any, example: str) -> Sample:
    if isinstance(line, zip):
        line = list(line)
    if not isinstance(line, (list, tuple)):
        raise ValueError(f"the output of process() must be in list or tuple type. Example: {example}")
    return line


class MultiSlotStringDataGenerator(DataGenerator):
    """Feasigns given as strings, written as they are."""

    def _gen_str(self, line: Any) -> str:
        line = _as_sequence(line, "[('words', ['1926', '08', '17']), ('label', ['1'])]")
        return " ".join(" ".join([str(len(elements))] + list(elements)) for _, elements in line) + "\n"


class MultiSlotDataGenerator(DataGenerator):
    """Feasigns given as int or float; every sample has the same slots, in
    the same order, none empty. A slot holding a float anywhere is a float
    slot (``_proto_info``: ``[(name, "uint64" | "float"), ...]``)."""

    def _gen_str(self, line: Any) -> str:
        line = _as_sequence(line, "[('words', [1926, 8, 17]), ('label', [1])]")
        first = self._proto_info is None
        if first:
            self._proto_info = []
        elif len(line) != len(self._proto_info):
            raise ValueError("the complete field set of two given line are inconsistent.")
        parts = []
        for index, (name, elements) in enumerate(line):
            _check_slot(name, elements)
            if first:
                self._proto_info.append((name, "uint64"))
            elif name != self._proto_info[index][0]:
                raise ValueError("the field name of two given line are not match: "
                                 f"require<{self._proto_info[index][0]}>, get<{name}>.")
            parts.append(self._slot_str(index, name, elements))
        return " ".join(parts) + "\n"

    def _slot_str(self, index: int, name: str, elements: list) -> str:
        for elem in elements:
            if isinstance(elem, float):
                self._proto_info[index] = (name, "float")
            elif not isinstance(elem, int):
                raise ValueError(f"the type of element{type(elem)} must be in int or float")
        return " ".join([str(len(elements))] + [str(e) for e in elements])


def _check_slot(name: Any, elements: Any) -> None:
    if not isinstance(name, str):
        raise ValueError(f"name{type(name)} must be in str type")
    if not isinstance(elements, list):
        raise ValueError(f"elements{type(elements)} must be in list type")
    if not elements:
        raise ValueError("the elements of each field can not be empty, you need padding it in process().")
