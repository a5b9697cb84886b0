"""``import paddle`` in a Python process started by one under Flotilla's
Paddle compatibility switch (``python3 -m flotilla.paddle_compat``).

The switch puts this package's directory first on its children's
PYTHONPATH (``flotilla.paddle_compat.export_to_children``), so a child run
as ``sys.executable child.py`` or as a Dataset pipe command ``python
reader.py`` finds this module when it imports ``paddle``. It installs the
switch's import hook in the child and replaces itself with the ``paddle``
the hook serves, so ``import paddle.fluid as fluid`` and the rest work as in
the parent. Harnesses that build a child's environment from PATH and
PYTHONPATH alone keep the switch too.

With FLOTILLA_PADDLE_COMPAT=0 in the child's environment it steps aside:
``import paddle`` then finds what it would have found without the switch.
"""

import importlib
import os
import sys

_CHILD_PATH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(_CHILD_PATH)))  # holds flotilla/


def _serve_flotilla() -> None:
    if _PACKAGE_ROOT not in sys.path:
        sys.path.append(_PACKAGE_ROOT)  # a package found through a PYTHONPATH the child was not given
    from flotilla.paddle_compat import install
    install()


del sys.modules[__name__]  # the module the import below puts here replaces this one
if os.environ.get("FLOTILLA_PADDLE_COMPAT") == "0":
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _CHILD_PATH]
else:
    _serve_flotilla()
importlib.import_module("paddle")
