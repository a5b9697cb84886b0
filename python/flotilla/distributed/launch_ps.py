"""``python3 -m flotilla.distributed.launch_ps [options] train.py``: a
parameter-server job (Paddle's ``paddle.distributed.launch_ps``), with the
flags of ``flotilla launch_ps``."""

import sys
from typing import List, NoReturn, Optional

from .launch import exec_launcher


def main(argv: Optional[List[str]] = None) -> NoReturn:
    """Entry point of ``python3 -m flotilla.distributed.launch_ps``."""
    exec_launcher("launch_ps", sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
