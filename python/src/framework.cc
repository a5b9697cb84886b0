// Program, Block, Variable, Scope and the default-program guards.
//
// Ownership: Python owns the Programs and Scopes it creates; Blocks belong
// to their Program and ScopeVars to their Scope (returned as references kept
// alive by their owner); a Variable is a value handle (block + name) that is
// valid while its Program lives — as in Paddle.
#include <optional>

#include "bindings.h"
#include "flotilla/framework/program.h"
#include "flotilla/framework/scope.h"
#include "tensor.h"

namespace flotilla::python {

namespace {

// Holds a ProgramGuard for a `with` block.
class GuardHolder {
 public:
  GuardHolder(Program& main, Program* startup) : main_(main), startup_(startup) {}
  void Enter() {
    if (startup_ != nullptr) {
      guard_.emplace(main_, *startup_);
    } else {
      guard_.emplace(main_);
    }
  }
  void Exit() { guard_.reset(); }

 private:
  Program& main_;
  Program* startup_;
  std::optional<ProgramGuard> guard_;
};

class NameGuardHolder {
 public:
  void Enter() { guard_.emplace(); }
  void Exit() { guard_.reset(); }

 private:
  std::optional<UniqueNameGuard> guard_;
};

std::string ShortDType(DType d) { return DTypeName(d); }

void BindVariable(py::module_& m) {
  py::class_<Variable>(m, "Variable", py::dynamic_attr(), "A variable of a Program (Paddle's Variable).")
      .def_property_readonly("name", &Variable::name)
      .def_property_readonly("shape", [](const Variable& v) { return py::tuple(py::cast(v.shape())); })
      .def_property_readonly("dtype", [](const Variable& v) { return ShortDType(v.dtype()); })
      .def_property("persistable", &Variable::persistable,
                    [](Variable& v, bool p) { v.set_persistable(p); })
      .def_property("stop_gradient", &Variable::stop_gradient,
                    [](Variable& v, bool s) { v.set_stop_gradient(s); })
      .def_property_readonly("is_parameter", [](const Variable& v) { return v.desc().is_parameter; })
      .def_property_readonly("is_data", [](const Variable& v) { return v.desc().is_data; })
      .def_property_readonly("block", &Variable::block, py::return_value_policy::reference_internal)
      .def_property_readonly("lod_level", [](const Variable& v) { return v.desc().lod_level; },
                             "Levels of sequence offsets its tensors carry (0: dense).")
      .def("__repr__", [](const Variable& v) {
        return "Variable(name=" + v.name() + ", shape=" + DimsToString(v.shape()) +
               ", dtype=" + ShortDType(v.dtype()) + ")";
      });
}

void BindBlock(py::module_& m) {
  py::class_<Block>(m, "Block", "A block of a Program: its variables and ops.")
      .def_property_readonly("idx", &Block::idx)
      .def_property_readonly("parent_idx", &Block::parent_idx)
      .def_property_readonly("program", &Block::program, py::return_value_policy::reference)
      .def("var", &Block::GetVariable, py::arg("name"),
           "The variable `name`; raises NotFoundError naming it and the block.")
      .def("has_var", &Block::HasVar, py::arg("name"))
      .def("var_names", &Block::var_names, "Variable names in creation order.")
      .def("all_parameters", [](Block& b) {
        std::vector<Variable> out;
        for (const std::string& n : b.var_names()) {
          if (b.Var(n).is_parameter) out.push_back(b.GetVariable(n));
        }
        return out;
      }, "The parameters of this block, in creation order.")
      .def_property_readonly("ops", [](const Block& b) {
        std::vector<std::string> types;
        for (const auto& op : b.ops()) types.push_back(op->type);
        return types;
      }, "The op types of this block, in order.")
      .def("_op_debug", [](const Block& b, size_t i) { return b.op(i).DebugString(); })
      .def("_op_attrs", [](const Block& b, size_t i) { return b.op(i).attrs; }, py::arg("index"),
           "The attributes of op ``index``, by name (for tests and tools).");
}

void BindProgram(py::module_& m) {
  py::class_<RunSettings>(m, "RunSettings",
                          "How Executor.run runs a program (ExecutionStrategy); set through an "
                          "ExecutionStrategy (CompiledProgram, fleet).")
      .def_readonly("iterations", &RunSettings::iterations, "runs per Executor.run (num_iteration_per_run)")
      .def_readonly("drop_scope_every", &RunSettings::drop_scope_every,
                    "temporaries freed every that many runs; 0: kept (num_iteration_per_drop_scope)");
  py::class_<Program>(m, "Program", "A static program (Paddle's Program): blocks of ops and variables.")
      .def(py::init<>())
      .def("global_block", &Program::global_block, py::return_value_policy::reference_internal)
      .def("block", &Program::block, py::arg("index"), py::return_value_policy::reference_internal)
      .def_property_readonly("num_blocks", &Program::num_blocks)
      .def("clone", &Program::Clone, py::arg("for_test") = false,
           "A deep copy; for_test drops backward/optimizer/lr ops and sets is_test.")
      .def("_prune", &Program::Prune, py::arg("targets"))
      .def("serialize", [](const Program& p) { return py::bytes(p.Serialize()); },
           "The ProgramDesc protobuf bytes (what save_inference_model writes).")
      .def_static("parse_from_string", [](const py::bytes& b) { return Program::Parse(b, "program bytes"); },
                  py::arg("binary_str"))
      .def_property("random_seed", &Program::random_seed, &Program::set_random_seed)
      .def_property_readonly("_id", &Program::id)
      .def_property_readonly("_run_settings", &Program::run_settings, py::return_value_policy::copy)
      .def("to_string", [](const Program& p, bool, bool) { return p.DebugString(); },
           py::arg("throw_on_error") = true, py::arg("with_details") = false)
      .def("__str__", &Program::DebugString);
  m.def("default_main_program", &default_main_program, py::return_value_policy::reference,
        "The program layers append to (inside program_guard: the guard's).");
  m.def("default_startup_program", &default_startup_program, py::return_value_policy::reference,
        "The program parameter initialisers append to.");
  py::class_<GuardHolder>(m, "_ProgramGuard")
      .def(py::init<Program&, Program*>(), py::keep_alive<1, 2>(), py::keep_alive<1, 3>())
      .def("__enter__", &GuardHolder::Enter)
      .def("__exit__", [](GuardHolder& g, py::args) { g.Exit(); });
  py::class_<NameGuardHolder>(m, "_UniqueNameGuard")
      .def(py::init<>())
      .def("__enter__", &NameGuardHolder::Enter)
      .def("__exit__", [](NameGuardHolder& g, py::args) { g.Exit(); });
  m.def("unique_name", &UniqueName, py::arg("prefix"), "\"fc\" → \"fc_0\", \"fc_1\", ...");
}

void BindScope(py::module_& m) {
  py::class_<ScopeVar>(m, "ScopeVar", "A variable's runtime value in a Scope.")
      .def_property_readonly("name", &ScopeVar::name)
      .def("get_tensor", &ScopeVar::GetMutableTensor, py::return_value_policy::reference_internal,
           "The tensor this variable holds (created empty when the variable is new).")
      .def("is_initialized", &ScopeVar::IsInitialized);
  py::class_<Scope>(m, "Scope", "Names → runtime values; parameters live in the global scope.")
      .def(py::init<>())
      .def("var", &Scope::Var, py::arg("name"), py::return_value_policy::reference_internal,
           "Creates `name` here when absent and returns it.")
      .def("find_var", &Scope::FindVar, py::arg("name"), py::return_value_policy::reference_internal,
           "The variable `name` here or in a parent scope; None when absent.")
      .def("local_var_names", &Scope::LocalVarNames)
      .def("new_scope", &Scope::NewScope, py::return_value_policy::reference_internal);
  m.def("global_scope", &global_scope, py::return_value_policy::reference,
        "The process-wide scope executors use by default.");
}

}  // namespace

py::handle KeepProgramAlive(py::handle variable, const Variable& v) {
  if (variable && v.block() != nullptr) {
    py::object program = py::cast(v.block()->program(), py::return_value_policy::reference);
    py::setattr(variable, "_program_ref", program);
  }
  return variable;
}

void BindFramework(py::module_& m) {
  BindVariable(m);
  BindBlock(m);
  BindProgram(m);
  BindScope(m);
}

}  // namespace flotilla::python
