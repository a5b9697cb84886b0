"""The build step of `pip install .` (pyproject.toml): runs CMake's build
of the Python package and puts the assembled package (BUILD/python/flotilla:
the pure-Python modules and flotilla._core) and the launcher
(BUILD/bin/flotilla, as flotilla/bin/flotilla) into the wheel."""

import os
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithCMake(build_py):
    """build_py that builds Flotilla with CMake first."""

    def run(self) -> None:
        super().run()
        build = os.environ.get("FLOTILLA_BUILD_DIR", os.path.join(ROOT, "build"))
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                               f"-DFLOTILLA_PYTHON={sys.executable}"])
        subprocess.check_call(["cmake", "--build", build, "--target", "flotilla_python", "flotilla"])
        target = os.path.join(self.build_lib, "flotilla")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(os.path.join(build, "python", "flotilla"), target,
                        ignore=shutil.ignore_patterns("__pycache__"))
        os.makedirs(os.path.join(target, "bin"), exist_ok=True)
        shutil.copy2(os.path.join(build, "bin", "flotilla"), os.path.join(target, "bin", "flotilla"))


class BinaryDistribution(Distribution):
    """The wheel holds an extension module and a program: platform-specific."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution, zip_safe=False)
