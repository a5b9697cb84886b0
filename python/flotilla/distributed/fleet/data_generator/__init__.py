"""Paddle's data generators (``paddle.distributed.fleet.data_generator``,
also ``fluid.incubate.data_generator``): the Python side of a Dataset's pipe
command. A subclass turns each raw line into ``[(slot_name, [feasign, ...]),
...]``; ``run_from_stdin`` writes those samples to stdout in Paddle's
MultiSlot text format, which the C++ parser (``io::MultiSlotParser``) reads:

    import paddle.distributed.fleet as fleet
    class Words(fleet.MultiSlotDataGenerator):
        def generate_sample(self, line):
            def it():
                ids = [int(t) for t in line.split()]
                yield ("words", ids[1:]), ("label", ids[:1])
            return it
    Words().run_from_stdin()      # prints "3 7 8 9 1 0\\n" for "0 7 8 9"
"""

from .data_generator import DataGenerator, MultiSlotDataGenerator, MultiSlotStringDataGenerator  # noqa: F401

__all__ = ["DataGenerator", "MultiSlotDataGenerator", "MultiSlotStringDataGenerator"]
