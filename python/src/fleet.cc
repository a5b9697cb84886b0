// Fleet (flotilla._core.fleet): role makers, DistributedStrategy, the
// process-wide fleet and the DistributeTranspiler. Calls that meet other
// processes (init, barriers, servers, saves) release the GIL.
#include <variant>

#include "bindings.h"
#include "tensor.h"
#include "flotilla/common/enforce.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/io/dataset.h"

namespace flotilla::python {

namespace {

using fleet::DistributedStrategy;
using fleet::StrategyFieldType;
using fleet::StrategyValue;

std::string Join(const std::string& group, const std::string& name) {
  return group.empty() ? name : group + "." + name;
}

// A field's value as Python's: a config group as a dict of its fields.
py::object GetField(const DistributedStrategy& s, const std::string& path) {
  if (DistributedStrategy::Type(path) == StrategyFieldType::kGroup) {
    py::dict d;
    for (const fleet::StrategyField& f : DistributedStrategy::Fields(path)) {
      d[py::str(f.name)] = GetField(s, Join(path, f.name));
    }
    return d;
  }
  return std::visit([](const auto& v) -> py::object { return py::cast(v); }, s.Get(path));
}

// Python's types, as Paddle checks them: an int is not a bool, a float may
// be given as an int.
bool IsInt(const py::handle& v) { return py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v); }
bool IsFloat(const py::handle& v) { return py::isinstance<py::float_>(v) || IsInt(v); }

[[noreturn]] void WrongType(const std::string& path, const char* expected, const py::handle& value) {
  throw py::type_error("DistributedStrategy." + path + " expects " + expected + ", got " +
                       py::repr(value).cast<std::string>());
}

template <typename T>
std::vector<T> ListOf(const std::string& path, const py::handle& value, bool (*fits)(const py::handle&),
                      const char* expected) {
  if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value)) WrongType(path, "a list", value);
  std::vector<T> out;
  for (const py::handle item : value) {
    if (!fits(item)) WrongType(path, expected, value);
    out.push_back(item.cast<T>());
  }
  return out;
}

bool IsStr(const py::handle& v) { return py::isinstance<py::str>(v); }

// `value` as the C++ value of `path`'s field; TypeError naming the field
// and the type it expects.
StrategyValue ValueFor(const std::string& path, StrategyFieldType type, const py::handle& value) {
  switch (type) {
    case StrategyFieldType::kBool:
      if (!py::isinstance<py::bool_>(value)) WrongType(path, "a bool", value);
      return value.cast<bool>();
    case StrategyFieldType::kInt:
      if (!IsInt(value)) WrongType(path, "an int", value);
      return value.cast<int64_t>();
    case StrategyFieldType::kFloat:
      if (!IsFloat(value)) WrongType(path, "a number", value);
      return value.cast<double>();
    case StrategyFieldType::kString:
      if (!IsStr(value)) WrongType(path, "a str", value);
      return value.cast<std::string>();
    case StrategyFieldType::kStringList: return ListOf<std::string>(path, value, IsStr, "a list of str");
    case StrategyFieldType::kFloatList: return ListOf<double>(path, value, IsFloat, "a list of numbers");
    case StrategyFieldType::kGroup: break;
  }
  FLOTILLA_THROW(Internal, "DistributedStrategy.", path, " is a config group");
}

// Sets `path` to `value` (a config group: a dict of its fields); throws
// TypeError naming the field and the type it expects (the Python strategy
// warns and keeps the old value, as Paddle does).
void SetField(DistributedStrategy& s, const std::string& path, const py::handle& value) {
  const StrategyFieldType type = DistributedStrategy::Type(path);
  if (type != StrategyFieldType::kGroup) return s.Set(path, ValueFor(path, type, value));
  if (!py::isinstance<py::dict>(value)) WrongType(path, "a dict of its fields", value);
  for (auto [k, v] : value.cast<py::dict>()) SetField(s, path + "." + py::str(k).cast<std::string>(), v);
}

std::vector<std::string> FieldNames() {
  std::vector<std::string> names;
  for (const fleet::StrategyField& f : DistributedStrategy::Fields()) names.push_back(f.name);
  return names;
}

void BindRoleInfo(py::module_& m) {
  py::enum_<fleet::Role>(m, "Role")
      .value("WORKER", fleet::Role::kWorker)
      .value("SERVER", fleet::Role::kServer)
      .value("HETER_WORKER", fleet::Role::kHeterWorker);
  using fleet::RoleInfo;
  py::class_<RoleInfo>(m, "RoleInfo", "What a role maker decided (read-only).")
      .def_readonly("role", &RoleInfo::role)
      .def_readonly("is_collective", &RoleInfo::is_collective)
      .def_readonly("non_distributed", &RoleInfo::non_distributed)
      .def_readonly("worker_index", &RoleInfo::worker_index)
      .def_readonly("worker_num", &RoleInfo::worker_num)
      .def_readonly("server_index", &RoleInfo::server_index)
      .def_readonly("worker_endpoints", &RoleInfo::worker_endpoints)
      .def_readonly("server_endpoints", &RoleInfo::server_endpoints)
      .def_readonly("heter_endpoints", &RoleInfo::heter_endpoints)
      .def_readonly("current_endpoint", &RoleInfo::current_endpoint)
      .def_readonly("store_address", &RoleInfo::store_address)
      .def_readonly("job_id", &RoleInfo::job_id);
}

fleet::UserDefinedRoleMaker MakeUserDefined(int current_id, fleet::Role role, int worker_num,
                                            std::vector<std::string> server_endpoints,
                                            std::vector<std::string> worker_endpoints, std::string store_address,
                                            std::optional<bool> is_collective) {
  return fleet::UserDefinedRoleMaker(fleet::UserDefinedRole{.current_id = current_id,
                                                            .role = role,
                                                            .worker_num = worker_num,
                                                            .is_collective = is_collective,
                                                            .worker_endpoints = std::move(worker_endpoints),
                                                            .server_endpoints = std::move(server_endpoints),
                                                            .store_address = std::move(store_address)});
}

void BindRoles(py::module_& m) {
  BindRoleInfo(m);
  py::class_<fleet::RoleMaker, std::shared_ptr<fleet::RoleMaker>>(m, "RoleMaker")
      .def("is_worker", &fleet::RoleMaker::is_worker)
      .def("is_server", &fleet::RoleMaker::is_server)
      .def("is_first_worker", &fleet::RoleMaker::is_first_worker)
      .def("worker_index", &fleet::RoleMaker::worker_index)
      .def("server_index", &fleet::RoleMaker::server_index)
      .def("worker_num", &fleet::RoleMaker::worker_num)
      .def("server_num", &fleet::RoleMaker::server_num)
      .def("get_trainer_endpoints", &fleet::RoleMaker::worker_endpoints)
      .def("get_pserver_endpoints", &fleet::RoleMaker::server_endpoints)
      .def("current_endpoint", &fleet::RoleMaker::current_endpoint)
      .def("info", &fleet::RoleMaker::info, py::return_value_policy::copy)
      .def("name", &fleet::RoleMaker::name);
  py::class_<fleet::PaddleCloudRoleMaker, fleet::RoleMaker, std::shared_ptr<fleet::PaddleCloudRoleMaker>>(
      m, "PaddleCloudRoleMaker")
      .def(py::init<bool, bool>(), py::arg("is_collective") = false, py::arg("non_distributed_fallback") = false);
  py::class_<fleet::UserDefinedRoleMaker, fleet::RoleMaker, std::shared_ptr<fleet::UserDefinedRoleMaker>>(
      m, "UserDefinedRoleMaker")
      .def(py::init(&MakeUserDefined), py::arg("current_id"), py::arg("role"), py::arg("worker_num") = 0,
           py::arg("server_endpoints") = std::vector<std::string>{},
           py::arg("worker_endpoints") = std::vector<std::string>{}, py::arg("store_address") = "",
           py::arg("is_collective") = std::nullopt);
  py::class_<fleet::MPISymetricRoleMaker, fleet::RoleMaker, std::shared_ptr<fleet::MPISymetricRoleMaker>>(
      m, "MPISymetricRoleMaker")
      .def(py::init<bool>(), py::arg("parameter_servers") = false, py::call_guard<py::gil_scoped_release>());
  m.def("file_shard", &fleet::FileShard, py::arg("files"), py::arg("worker_index"), py::arg("worker_num"),
        "Paddle's get_file_shard: block `worker_index` of `files` split into `worker_num` contiguous blocks, "
        "the first len(files) % worker_num one file longer.");
}

void BindStrategy(py::module_& m) {
  py::class_<DistributedStrategy>(m, "DistributedStrategy")
      .def(py::init<>())
      .def("_get", &GetField, py::arg("path"))
      .def(
          "_set",
          [](DistributedStrategy& s, const std::string& path, const py::handle& value) {
            const DistributedStrategy before = s;
            SetField(s, path, value);
            try {
              s.CheckOnAssign(path);
            } catch (...) {
              s = before;  // as Paddle's setters: a refused value is not kept
              throw;
            }
          },
          py::arg("path"), py::arg("value"))
      .def("_has", &DistributedStrategy::Has, py::arg("path"))
      .def_static("_fields", &FieldNames)
      .def("to_text", &DistributedStrategy::ToText)
      .def_static("from_text", &DistributedStrategy::FromText, py::arg("text"), py::arg("what") = "strategy")
      .def("validate", &DistributedStrategy::Validate,
           "What applying the strategy decides: raises for a field out of range or refused, naming it.")
      .def("_hints", &DistributedStrategy::Hints)
      .def("_new_hints", &DistributedStrategy::NewHints)
      .def("_honour_paddle_flags", &DistributedStrategy::HonourPaddleFlags);
  m.def("_apply_exec_strategy", &fleet::ApplyExecutionStrategy, py::arg("strategy"), py::arg("program"),
        "Validates the strategy, then applies its exec_strategy: num_threads to this process's GEMM kernels, "
        "the iteration counts to the program's run settings.");
}

void BindFleetFunctions(py::module_& m) {
  py::class_<fleet::DistributedOptimizer>(m, "DistributedOptimizer")
      .def("minimize",
           [](fleet::DistributedOptimizer& d, const Variable& loss, Program* startup,
              const std::vector<std::string>& params, const std::set<std::string>& no_grad) {
             return MinimizeResultTuple(d.minimize(loss, startup, params, no_grad));
           },
           py::arg("loss"), py::arg("startup_program") = nullptr,
           py::arg("parameter_list") = std::vector<std::string>{},
           py::arg("no_grad_set") = std::set<std::string>{})
      .def_property_readonly("buckets", &fleet::DistributedOptimizer::buckets);
  m.def("init", [](const fleet::RoleMaker& role) { fleet::init(role); }, py::arg("role_maker"), ReleaseInterruptible());
  m.def("initialized", [] { return fleet::default_fleet().initialized(); });
  m.def("role", [] { return fleet::default_fleet().role(); }, "The role the last init took (a RoleInfo).");
  m.def("is_worker", &fleet::is_worker);
  m.def("is_server", &fleet::is_server);
  m.def("is_first_worker", &fleet::is_first_worker);
  m.def("worker_index", &fleet::worker_index);
  m.def("worker_num", &fleet::worker_num);
  m.def("worker_endpoints", &fleet::worker_endpoints);
  m.def("server_endpoints", &fleet::server_endpoints);
  m.def("barrier_worker", &fleet::barrier_worker, ReleaseInterruptible());
  m.def("global_shuffle",
        [](io::Dataset& ds, uint64_t seed) { fleet::default_fleet().global_shuffle(ds, seed); },
        py::arg("dataset"), py::arg("seed"), ReleaseInterruptible(),
        "Exchanges the InMemoryDataset's records with every other worker's through the job's store, then "
        "shuffles them (every worker calls it).");
  m.def("sum_over_workers", [](int64_t value) { return fleet::default_fleet().sum_over_workers(value); },
        py::arg("value"), ReleaseInterruptible(), "The sum of `value` over every worker (each calls it).");
  m.def("distributed_optimizer",
        [](optimizer::Optimizer& opt, const DistributedStrategy& s) { return fleet::distributed_optimizer(opt, s); },
        py::arg("optimizer"), py::arg("strategy"), py::keep_alive<0, 1>());
  m.def("main_program", &fleet::main_program, py::return_value_policy::reference);
  m.def("startup_program", &fleet::startup_program, py::return_value_policy::reference);
  m.def("save_persistables",
        [](const Executor& exe, const std::string& dir, const Program* main, const Scope* scope) {
          fleet::save_persistables(exe, dir, main, scope);
        },
        py::arg("executor"), py::arg("dirname"), py::arg("main_program") = nullptr, py::arg("scope") = nullptr,
        ReleaseInterruptible());
  m.def("save_inference_model",
        [](const Executor& exe, const std::string& dir, const std::vector<std::string>& feeds,
           const std::vector<std::string>& fetches, const Program* main, const Scope* scope) {
          fleet::save_inference_model(exe, dir, feeds, fetches, main, scope);
        },
        py::arg("executor"), py::arg("dirname"), py::arg("feeded_var_names"), py::arg("target_vars"),
        py::arg("main_program") = nullptr, py::arg("scope") = nullptr, ReleaseInterruptible());
  m.def("init_server", [](const std::string& dir) { fleet::init_server(dir); }, py::arg("model_dir") = "",
        ReleaseInterruptible());
  m.def("run_server", [] { fleet::run_server(); }, ReleaseInterruptible());
  m.def("init_worker", [](bool loaded) { fleet::init_worker(loaded); }, py::arg("servers_loaded") = false,
        ReleaseInterruptible());
  m.def("stop_worker", [] { fleet::stop_worker(); }, ReleaseInterruptible());
  m.def("prefetch_sparse",
        [](const py::dict& feed) { fleet::prefetch_sparse(ToFeedMap(fleet::main_program(), feed)); },
        py::arg("feed"));
  // Fault tolerance (strategy.fault_tolerance = "step"): see Fleet::run_step.
  py::class_<fleet::StepState>(m, "StepState")
      .def(py::init<>())
      .def_readwrite("step", &fleet::StepState::step)
      .def_readwrite("position", &fleet::StepState::position);
  m.def("run_step",
        [](Executor& exe, const Program& program, const py::dict& feed,
           const std::vector<std::string>& fetch_list, fleet::StepState& state,
           int64_t samples_per_rank) -> py::object {
          FeedMap feeds = ToFeedMap(program, feed);
          std::optional<std::vector<Tensor>> out;
          {
            py::gil_scoped_release release;
            out = fleet::run_step(exe, program, feeds, fetch_list, state, samples_per_rank);
          }
          if (!out) return py::none();
          py::list arrays;
          for (const Tensor& t : *out) arrays.append(ToNumpy(t));
          return arrays;
        },
        py::arg("executor"), py::arg("program"), py::arg("feed"), py::arg("fetch_list"),
        py::arg("state"), py::arg("samples_per_rank") = 0);
  m.def("fault_stats", [] {
    const fleet::FaultStats& f = fleet::default_fleet().fault_stats();
    py::dict d;
    d["generation"] = f.generation;
    d["faults"] = f.faults;
    d["steps_lost"] = f.steps_lost;
    d["last_reform_ms"] = f.last_reform_ms;
    d["last_recovery_ms"] = f.last_recovery_ms;
    return d;
  });
}

void BindTranspiler(py::module_& m) {
  using fleet::DistributeTranspiler;
  using fleet::DistributeTranspilerConfig;
  py::class_<DistributeTranspilerConfig>(m, "DistributeTranspilerConfig")
      .def(py::init<>())
      .def_readwrite("mode", &DistributeTranspilerConfig::mode)
      .def_readwrite("geo_k_steps", &DistributeTranspilerConfig::geo_k_steps)
      .def_readwrite("send_queue_size", &DistributeTranspilerConfig::send_queue_size)
      .def_readwrite("max_merge_var_num", &DistributeTranspilerConfig::max_merge_var_num)
      .def_readwrite("independent_recv_thread", &DistributeTranspilerConfig::independent_recv_thread)
      .def_readwrite("min_block_size", &DistributeTranspilerConfig::min_block_size)
      .def_readwrite("seed_servers", &DistributeTranspilerConfig::seed_servers)
      .def_readwrite("rpc_timeout_ms", &DistributeTranspilerConfig::rpc_timeout_ms);
  py::class_<DistributeTranspiler>(m, "DistributeTranspiler")
      .def(py::init<DistributeTranspilerConfig>(), py::arg("config") = DistributeTranspilerConfig{})
      .def("transpile", &DistributeTranspiler::transpile, py::arg("trainer_id"), py::arg("pservers"),
           py::arg("trainers"), py::arg("sync_mode") = true, py::arg("program") = nullptr,
           py::arg("startup_program") = nullptr)
      .def("get_trainer_program", &DistributeTranspiler::get_trainer_program,
           py::return_value_policy::reference_internal)
      .def("get_pserver_program", &DistributeTranspiler::get_pserver_program, py::arg("endpoint"),
           py::arg("model_dir") = "")
      .def("get_startup_program", &DistributeTranspiler::get_startup_program, py::arg("endpoint"),
           py::arg("pserver_program"))
      .def("get_test_program", &DistributeTranspiler::get_test_program, py::arg("test_program"))
      .def_property_readonly("pserver_endpoints", &DistributeTranspiler::pserver_endpoints);
  m.def("ps_transpiler", [] { return fleet::default_fleet().ps_transpiler(); },
        py::return_value_policy::reference);
}

}  // namespace

void BindFleet(py::module_& parent) {
  py::module_ m = parent.def_submodule("fleet", "Distributed training: roles, strategy, fleet, transpiler.");
  BindRoles(m);
  BindStrategy(m);
  BindFleetFunctions(m);
  BindTranspiler(m);
}

}  // namespace flotilla::python
