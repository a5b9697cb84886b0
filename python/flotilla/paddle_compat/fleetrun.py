"""``fleetrun [launch options] train.py [args...]``: Paddle's launch command,
served by ``flotilla launch --paddle_compat`` (the same options as ``flotilla
launch``; every worker runs its script under the compatibility switch).
Installed as a command by ``pip install .`` and ``make install``."""

import sys
from typing import List, NoReturn, Optional

from . import launch


def main(argv: Optional[List[str]] = None) -> NoReturn:
    """Entry point of the ``fleetrun`` command."""
    launch("launch", sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
