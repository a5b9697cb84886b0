#include "launch/python_script.h"

#include <unistd.h>

#include <filesystem>

#include "flotilla/common/enforce.h"

#ifndef FLOTILLA_DEFAULT_PYTHON
#define FLOTILLA_DEFAULT_PYTHON "/usr/bin/python3"
#endif

namespace flotilla::launch {

namespace {

bool IsPythonScript(const std::string& program) {
  return program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0;
}

}  // namespace

std::string PythonInterpreter(const LaunchOptions& options,
                              const std::optional<std::string>& env_python) {
  if (!options.python.empty()) return options.python;
  if (env_python && !env_python->empty()) return *env_python;
  return FLOTILLA_DEFAULT_PYTHON;
}

std::string InTreePackageRoot(const std::string& launcher_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::weakly_canonical(launcher_path, ec);
  if (ec) return "";
  const fs::path root = exe.parent_path().parent_path() / "python";
  return fs::exists(root / "flotilla" / "__init__.py", ec) ? root.string() : "";
}

PythonLaunch PythonCommand(const LaunchOptions& options, const std::string& interpreter,
                           const std::string& package_root,
                           const std::optional<std::string>& inherited_pythonpath) {
  FLOTILLA_ENFORCE(!options.command.empty(), "no training program given: flotilla launch [options] "
                   "training_script [args...]");
  const std::string& script = options.command.front();
  if (!IsPythonScript(script)) {
    FLOTILLA_ENFORCE(!options.paddle_compat, "--paddle_compat runs a Python script (train.py), "
                     "got '", script, "'");
    FLOTILLA_ENFORCE(options.python.empty(), "--python ", options.python, " runs a Python script "
                     "(train.py), got '", script, "'");
    return {options.command, {}};
  }
  if (access(script.c_str(), R_OK) != 0) {
    FLOTILLA_THROW(NotFound, "training script '", script, "' does not exist or cannot be read");
  }
  PythonLaunch out;
  out.command = {interpreter};
  if (options.paddle_compat) out.command.insert(out.command.end(), {"-m", "flotilla.paddle_compat"});
  out.command.insert(out.command.end(), options.command.begin(), options.command.end());
  if (!package_root.empty()) {
    std::string path = package_root;
    if (inherited_pythonpath && !inherited_pythonpath->empty()) path += ":" + *inherited_pythonpath;
    out.env.emplace_back("PYTHONPATH", path);
  }
  return out;
}

}  // namespace flotilla::launch
