"""Paddle's Dataset API: ``paddle.distributed.InMemoryDataset`` /
``QueueDataset`` (2.x, configured by ``init(...)``) and the 1.x
``fluid.DatasetFactory().create_dataset("InMemoryDataset")`` with its
setters. The state lives in C++ (``flotilla._core.io.Dataset``: files read
through the pipe command on parallel threads, parsed as MultiSlot text);
these classes give it Paddle's names.

    dataset = paddle.distributed.InMemoryDataset()
    dataset.init(batch_size=32, thread_num=2, use_var=[words, label],
                 pipe_command="python3 reader.py")
    dataset.set_filelist(["part-0", "part-1"])
    dataset.load_into_memory()
    dataset.local_shuffle()
    dataset.get_memory_data_size()
"""

import random
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ... import _core

Batch = Dict[str, Tuple[np.ndarray, np.ndarray]]


def _slot_type(var: Any) -> str:
    dtype = str(getattr(var.dtype, "name", var.dtype)).lower()
    if "int64" in dtype:
        return "uint64"
    if "float32" in dtype or "fp32" in dtype:
        return "float"
    raise ValueError("Currently, paddle.distributed.fleet.dataset only supports dtype=float32 and dtype=int64")


# Paddle's settings that only tune its own implementation.
_TUNING = {"queue_num", "fleet_send_batch_size", "fleet_send_sleep_seconds", "merge_size", "candidate_size"}
_DATA_FEEDS = {"MultiSlotInMemoryDataFeed", "MultiSlotDataFeed"}


def _check_extra_settings(kwargs: Dict[str, Any]) -> None:
    for key, value in kwargs.items():
        if key == "data_feed_type":
            if value not in _DATA_FEEDS:
                raise NotImplementedError(f"Dataset data_feed_type={value!r} is not in Flotilla; it reads "
                                          f"{' and '.join(sorted(_DATA_FEEDS))} (the MultiSlot text format)")
        elif key in ("parse_ins_id", "parse_content", "fea_eval"):
            if value:
                raise NotImplementedError(f"Dataset {key}=True is not in Flotilla")
        elif key not in _TUNING:
            raise TypeError(f"Dataset.init() got an unexpected keyword argument {key!r}")


def _dense_shape(var: Any) -> List[int]:
    """A lod_level 0 variable is a dense slot of its shape; others are sequences."""
    return [int(d) for d in var.shape] if var.lod_level == 0 else []


class DatasetBase:
    """What both datasets share: settings, the file list, batches."""

    _KIND = ""

    def __init__(self) -> None:
        self.dataset = _core.io.Dataset(self._KIND)
        self.thread_num = 1
        self.filelist: List[str] = []
        self.use_var: List[Any] = []
        self.input_type = 0
        self.fs_name = self.fs_ugi = ""
        self.download_cmd = "cat"

    def init(self, batch_size: int = 1, thread_num: int = 1, use_var: Optional[Sequence[Any]] = None,
             pipe_command: str = "cat", input_type: int = 0, fs_name: str = "", fs_ugi: str = "",
             download_cmd: str = "cat", **kwargs: Any) -> None:
        """Paddle 2.x: every setting at once. Paddle's tuning keys
        (``queue_num``, ``fleet_send_batch_size``, ...) are accepted and have
        no effect; features Flotilla lacks raise NotImplementedError by name;
        an unknown key is a TypeError."""
        _check_extra_settings(kwargs)
        self._set_batch_size(batch_size)
        self._set_thread(thread_num)
        self._set_use_var(list(use_var or []))
        self._set_pipe_command(pipe_command)
        self._set_input_type(input_type)
        self._set_hdfs_config(fs_name, fs_ugi)
        self._set_download_cmd(download_cmd)

    def _set_pipe_command(self, pipe_command: str) -> None:
        self.dataset.set_pipe_command(pipe_command)

    def _set_batch_size(self, batch_size: int) -> None:
        self.dataset.set_batch_size(batch_size)

    def _set_thread(self, thread_num: int) -> None:
        self.dataset.set_thread_num(thread_num)
        self.thread_num = thread_num

    def _set_use_var(self, var_list: Sequence[Any]) -> None:
        if var_list:
            self.dataset.set_use_var([(v.name, _slot_type(v), _dense_shape(v)) for v in var_list])
        self.use_var = list(var_list)

    def _set_input_type(self, input_type: int) -> None:
        if input_type != 0:
            raise NotImplementedError("Dataset input_type=1 (a generator yielding whole batches) is not in "
                                      "Flotilla; yield one sample per line (input_type=0)")
        self.input_type = input_type

    def _set_hdfs_config(self, fs_name: str, fs_ugi: str) -> None:
        if fs_name:
            raise NotImplementedError(f"Dataset on HDFS ({fs_name}) is not in Flotilla; read local files, or "
                                      "fetch them in the pipe command")
        self.fs_name, self.fs_ugi = fs_name, fs_ugi

    def _set_download_cmd(self, download_cmd: str) -> None:
        if download_cmd != "cat":
            raise NotImplementedError("Dataset download_cmd is not in Flotilla; fetch the files in the pipe command")
        self.download_cmd = download_cmd

    # Paddle 1.x names of the setters.
    set_pipe_command = _set_pipe_command
    set_batch_size = _set_batch_size
    set_thread = _set_thread
    set_use_var = _set_use_var
    set_hdfs_config = _set_hdfs_config
    set_download_cmd = _set_download_cmd

    def set_filelist(self, filelist: Sequence[str]) -> None:
        """The files this trainer reads, each through the pipe command."""
        self.dataset.set_filelist(list(filelist))
        self.filelist = list(filelist)

    def _batches(self, consume: Callable[[Batch], None]) -> None:
        """Calls ``consume({slot: (values, offsets)})`` per batch."""
        self.dataset.for_each_batch(consume)

    def _dynamic_adjust_before_train(self, thread_num: int) -> None:
        pass

    def _dynamic_adjust_after_train(self) -> None:
        pass


def _across_trainers(fleet: Any) -> bool:
    """True when ``fleet`` names a job of several trainers."""
    return fleet is not None and fleet.worker_num() > 1


class InMemoryDataset(DatasetBase):
    """Loads every file into memory (C++), then shuffles and batches there."""

    _KIND = "InMemoryDataset"

    def _init_distributed_settings(self, **kwargs: Any) -> None:
        """Paddle's distributed settings: tuning keys have no effect, the
        features Flotilla lacks raise NotImplementedError."""
        _check_extra_settings(kwargs)

    def update_settings(self, **kwargs: Any) -> None:
        """Changes the settings ``init`` took."""
        setters = {"pipe_command": self._set_pipe_command, "batch_size": self._set_batch_size,
                   "thread_num": self._set_thread, "use_var": self._set_use_var,
                   "input_type": self._set_input_type, "download_cmd": self._set_download_cmd}
        _check_extra_settings({k: v for k, v in kwargs.items() if k not in setters})
        for key, value in kwargs.items():
            if key in setters:
                setters[key](value)

    def load_into_memory(self, is_shuffle: bool = False) -> None:
        """Reads every file (``thread_num`` at a time) into memory. Raises
        CorruptionError naming file:line for a malformed line and
        UnavailableError with the exit status and stderr tail for a failing
        pipe command."""
        self.dataset.load_into_memory()
        if is_shuffle:
            self.local_shuffle()

    def preload_into_memory(self, thread_num: Optional[int] = None) -> None:
        """``load_into_memory`` in the background; ``wait_preload_done`` ends it."""
        if thread_num is not None:
            self._set_thread(thread_num)
        self.dataset.preload_into_memory()

    def wait_preload_done(self) -> None:
        self.dataset.wait_preload_done()

    def local_shuffle(self) -> None:
        """Shuffles the records in memory (seeded from Python's ``random``)."""
        self.dataset.local_shuffle(random.getrandbits(64))

    def global_shuffle(self, fleet: Any = None, thread_num: int = 12) -> None:
        """Exchanges the records in memory with every other trainer's over
        the job's store (each record goes to a trainer drawn at random),
        then shuffles them locally. Every trainer must call it. Without
        ``fleet`` or with one trainer, a local shuffle. ``thread_num`` (the
        threads Paddle sends with) has no effect."""
        seed = random.getrandbits(64)
        if _across_trainers(fleet):
            _core.fleet.global_shuffle(self.dataset, seed)
        else:
            self.dataset.local_shuffle(seed)

    def release_memory(self) -> None:
        self.dataset.release_memory()

    def get_memory_data_size(self, fleet: Any = None) -> int:
        """The records in memory: with ``fleet``, summed over every trainer
        (each must call it)."""
        size = self.dataset.memory_data_size()
        return _core.fleet.sum_over_workers(size) if _across_trainers(fleet) else size

    def get_shuffle_data_size(self, fleet: Any = None) -> int:
        """The records after the last shuffle: with ``fleet``, summed over
        every trainer (each must call it)."""
        size = self.dataset.shuffle_data_size()
        return _core.fleet.sum_over_workers(size) if _across_trainers(fleet) else size


class QueueDataset(DatasetBase):
    """Streams the files through the pipe command while training; nothing
    stays in memory."""

    _KIND = "QueueDataset"

    def local_shuffle(self) -> None:
        raise NotImplementedError("QueueDataset does not support local shuffle, "
                                  "please use InMemoryDataset for local_shuffle")

    def global_shuffle(self, fleet: Any = None) -> None:
        raise NotImplementedError("QueueDataset does not support global shuffle, "
                                  "please use InMemoryDataset for global_shuffle")


class DatasetFactory:
    """Paddle 1.x: ``DatasetFactory().create_dataset("InMemoryDataset")``."""

    _KINDS = {"InMemoryDataset": InMemoryDataset, "QueueDataset": QueueDataset}

    def create_dataset(self, datafeed_class: str = "QueueDataset") -> DatasetBase:
        if datafeed_class not in self._KINDS:
            raise ValueError(f"datafeed class {datafeed_class} does not exist; "
                             f"Flotilla has {', '.join(sorted(self._KINDS))}")
        return self._KINDS[datafeed_class]()


__all__ = ["DatasetBase", "InMemoryDataset", "QueueDataset", "DatasetFactory"]
