"""``python3 -m flotilla.paddle_compat`` — runs Paddle scripts and launch
commands on Flotilla:

    python3 -m flotilla.paddle_compat train.py [args...]
    python3 -m flotilla.paddle_compat -m paddle.distributed.launch [launch options] train.py [args...]
    python3 -m flotilla.paddle_compat -m paddle.distributed.launch_ps [options] train.py [args...]
    python3 -m flotilla.paddle_compat fleetrun [launch options] train.py [args...]
    python3 -m flotilla.paddle_compat -m some.module [args...]

Launch commands start ``flotilla launch --paddle_compat``, whose workers run
their scripts under this switch too. The Python processes the script starts
(``sys.executable child.py``, pipe commands such as ``python reader.py``)
import Flotilla's ``paddle`` as well; set FLOTILLA_PADDLE_COMPAT=0 in a
child's environment to opt it out.
"""

import os
import runpy
import sys
from typing import List

from . import LAUNCHERS, export_to_children, install, launch

USAGE = __doc__


def main(argv: List[str]) -> None:
    """Runs what ``argv`` (without the program name) asks for."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        sys.exit(0 if argv else 2)
    if argv[0] == "-m":
        if len(argv) < 2:
            sys.exit("flotilla.paddle_compat: -m needs a module name")
        module, args = argv[1], argv[2:]
        if module in LAUNCHERS:
            launch(LAUNCHERS[module], args)
        install()
        export_to_children()
        sys.argv = [module] + args
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return
    if argv[0] in LAUNCHERS:
        launch(LAUNCHERS[argv[0]], argv[1:])
    script, args = argv[0], argv[1:]
    if not os.path.isfile(script):
        sys.exit(f"flotilla.paddle_compat: no such script: {script}")
    install()
    export_to_children()
    sys.argv = [script] + args
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python3 script.py` would
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
