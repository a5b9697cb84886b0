"""Paddle 1.x ``fluid.incubate.data_generator``: the same generators as
``paddle.distributed.fleet.data_generator``."""

from ....distributed.fleet.data_generator import (DataGenerator, MultiSlotDataGenerator,  # noqa: F401
                                                  MultiSlotStringDataGenerator)

__all__ = ["DataGenerator", "MultiSlotDataGenerator", "MultiSlotStringDataGenerator"]
