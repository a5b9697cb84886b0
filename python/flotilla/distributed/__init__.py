"""Distributed training: the classic transpiler now; fleet (collective and
parameter-server) and the launcher under ``flotilla.distributed.fleet`` and
``python3 -m flotilla.distributed.launch``."""

from .transpiler import DistributeTranspiler, DistributeTranspilerConfig  # noqa: F401
from .fleet.dataset import InMemoryDataset, QueueDataset  # noqa: F401
from .entry_attr import CountFilterEntry, ProbabilityEntry, ShowClickEntry  # noqa: F401

__all__ = ["DistributeTranspiler", "DistributeTranspilerConfig", "InMemoryDataset", "QueueDataset",
           "CountFilterEntry", "ProbabilityEntry", "ShowClickEntry"]
