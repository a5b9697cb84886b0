"""Paddle 1.x ``fluid.dataset``: ``DatasetFactory`` and the datasets it
creates (the same classes as ``paddle.distributed.InMemoryDataset``)."""

from ..distributed.fleet.dataset import DatasetBase, DatasetFactory, InMemoryDataset, QueueDataset  # noqa: F401

__all__ = ["DatasetFactory", "DatasetBase", "InMemoryDataset", "QueueDataset"]
