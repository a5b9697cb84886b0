"""LoD tensors from Python (Paddle's ``fluid.create_lod_tensor``): data plus
the lengths of its sequences, which the tensor keeps as offsets.

    t = fluid.create_lod_tensor(np.arange(5).reshape(5, 1), [[2, 3]], fluid.CPUPlace())
    t.lod()                         # [[0, 2, 5]]
    t.recursive_sequence_lengths()  # [[2, 3]]
"""

from typing import Any, List, Sequence

import numpy as np

from . import _core


class LoDMismatchError(ValueError, AssertionError):
    """A list of sequences whose lengths differ from the given
    recursive_seq_lens. Also an AssertionError: Paddle asserts there, and its
    scripts catch that."""


def create_lod_tensor(data: Any, recursive_seq_lens: Sequence[Sequence[int]], place: Any = None) -> "_core.Tensor":
    """A LoDTensor holding ``data`` (a NumPy array, a LoDTensor, or a list of
    sequences) with sequence lengths ``recursive_seq_lens`` (outermost level
    first). A list of sequences is flattened to ``[total, 1]`` and must match
    ``[[len(seq) for seq in data]]``. Raises ``InvalidArgumentError`` when the
    lengths do not describe the data's rows."""
    lengths: List[List[int]] = [[int(n) for n in level] for level in recursive_seq_lens]
    if isinstance(data, _core.Tensor):
        data = np.array(data)
    elif isinstance(data, list):
        if [[len(seq) for seq in data]] != lengths:
            raise LoDMismatchError(f"create_lod_tensor: the sequences' lengths {[len(seq) for seq in data]} "
                             f"do not match recursive_seq_lens {lengths}")
        flat = [step for seq in data for step in seq]
        data = np.array(flat) if flat else np.zeros([0], dtype="int64")
        data = data.reshape(data.shape + (1,))
    elif not isinstance(data, np.ndarray):
        raise TypeError(f"create_lod_tensor: data must be a numpy.ndarray, a list or a LoDTensor, "
                        f"got {type(data).__name__}")
    tensor = _core.Tensor()
    tensor.set(data, place)
    tensor.set_recursive_sequence_lengths(lengths)
    return tensor


def create_random_int_lodtensor(recursive_seq_lens: Sequence[Sequence[int]], base_shape: Sequence[int],
                                place: Any, low: int, high: int) -> "_core.Tensor":
    """A LoDTensor of random int64 values in ``[low, high]`` with rows of
    ``base_shape`` and sequence lengths ``recursive_seq_lens``."""
    rows = sum(int(n) for n in recursive_seq_lens[-1])
    data = np.random.randint(low, high + 1, [rows] + list(base_shape)).astype("int64")
    return create_lod_tensor(data, recursive_seq_lens, place)


__all__ = ["create_lod_tensor", "create_random_int_lodtensor", "LoDMismatchError"]
