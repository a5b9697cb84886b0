// Python training scripts under the launcher: `flotilla launch train.py
// args...` starts every process as `PYTHON train.py args...`, and with
// --paddle_compat as `PYTHON -m flotilla.paddle_compat train.py args...`
// (Paddle's `import paddle` served by Flotilla), with the Flotilla package
// that belongs to this launcher importable. Everything else about the job
// is unchanged.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "flotilla/launch/options.h"
#include "launch/env_contract.h"

namespace flotilla::launch {

struct PythonLaunch {
  std::vector<std::string> command;  // what every process runs
  EnvList env;                       // added to every process's environment
};

// The interpreter: --python, else $FLOTILLA_PYTHON, else the one Flotilla
// was built against (CMake's FLOTILLA_PYTHON, Debian's /usr/bin/python3).
std::string PythonInterpreter(const LaunchOptions& options,
                              const std::optional<std::string>& env_python);

// The directory holding the `flotilla` package of this launcher's build
// (BUILD/python next to BUILD/bin/flotilla), or "" when the package is
// installed instead (then the interpreter finds it itself).
std::string InTreePackageRoot(const std::string& launcher_path);

// The command and environment for `options.command`: a `.py` script (or any
// script with --paddle_compat) runs under the interpreter with
// PYTHONPATH = package_root:inherited_pythonpath (package_root "" leaves
// PYTHONPATH alone); anything else runs unchanged. Throws InvalidArgument
// when --paddle_compat is given with a program that is not a Python script,
// NotFound when the script does not exist.
PythonLaunch PythonCommand(const LaunchOptions& options, const std::string& interpreter,
                           const std::string& package_root,
                           const std::optional<std::string>& inherited_pythonpath);

}  // namespace flotilla::launch
