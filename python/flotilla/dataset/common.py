"""Where Paddle's dataset files are found locally (Paddle's
``paddle.dataset.common`` cache layout); Flotilla downloads nothing."""

import os


def data_home() -> str:
    """Where Paddle's dataset files are looked for: $FLOTILLA_DATA_HOME, else
    Paddle's cache directory ~/.cache/paddle/dataset."""
    home = os.environ.get("FLOTILLA_DATA_HOME")
    return home if home else os.path.join(os.path.expanduser("~"), ".cache", "paddle", "dataset")


def local_file(dataset: str, name: str) -> str:
    """The path of ``<data_home>/<dataset>/<name>``; FileNotFoundError naming
    where to put it when it is missing."""
    path = os.path.join(data_home(), dataset, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"paddle.dataset.{dataset}: {path} is missing; Flotilla downloads nothing: put {name} there "
            f"(Paddle's cache layout), or set FLOTILLA_DATA_HOME to a directory holding {dataset}/{name}")
    return path
