# FLOTILLA_PYTHON: the interpreter the Python package is built and tested
# against, and that `flotilla launch train.py` runs scripts with by default:
# Debian's /usr/bin/python3 (the one with Debian's numpy, pytest and
# pybind11), whatever python3 comes first on PATH.
if(EXISTS /usr/bin/python3)
  set(FLOTILLA_PYTHON_DEFAULT /usr/bin/python3)
else()
  find_program(FLOTILLA_PYTHON_DEFAULT python3 REQUIRED)
endif()
set(FLOTILLA_PYTHON ${FLOTILLA_PYTHON_DEFAULT} CACHE FILEPATH "Python interpreter to build and test against")
