// io (flotilla._core.io): checkpoints, inference models, the DataFeeder and
// the datasets the examples use. File I/O releases the GIL; files are the
// C++ API's, so either side loads what the other saved.
#include "bindings.h"
#include "flotilla/common/strings.h"
#include "flotilla/io/checkpoint.h"
#include "flotilla/io/data_feeder.h"
#include "flotilla/io/datasets/uci_housing.h"
#include "flotilla/io/inference_model.h"
#include "flotilla/io/paddle_tensors.h"
#include "tensor.h"

namespace flotilla::python {

namespace {

// A Python iterator over a C++ reader's samples, each a tuple of arrays.
class SampleIterator {
 public:
  explicit SampleIterator(const io::Reader& reader) : next_(reader()) {}
  py::tuple Next() {
    std::optional<io::Sample> s;
    {
      py::gil_scoped_release release;
      s = next_();
    }
    if (!s) throw py::stop_iteration();
    py::tuple out(s->size());
    for (size_t i = 0; i < s->size(); ++i) out[i] = ToNumpy((*s)[i]);
    return out;
  }

 private:
  io::SampleGenerator next_;
};

// Paddle's DataFeeder: a minibatch (a list of samples, each a sequence with
// one value per feed variable) → {name: batch Tensor}. Values are converted
// to their variable's dtype, as Paddle's feeder does; the C++ feeder checks
// the shapes and stacks the batch with the GIL released.
class Feeder {
 public:
  explicit Feeder(const std::vector<Variable>& feed_list) : feeder_(feed_list) {
    for (const Variable& v : feed_list) dtypes_.push_back(v.dtype());
  }

  py::dict Feed(const py::iterable& minibatch) const {
    const std::vector<std::string>& names = feeder_.feed_names();
    std::vector<io::Sample> batch;
    for (const py::handle& sample : minibatch) {
      py::sequence values = py::reinterpret_borrow<py::sequence>(sample);
      FLOTILLA_ENFORCE(values.size() == names.size(), "DataFeeder: sample ", batch.size(), " has ",
                       values.size(), " values but the feed list has ", names.size(), " variables (",
                       Join(names, ", "), ")");
      io::Sample s;
      for (size_t i = 0; i < names.size(); ++i) {
        if (py::isinstance<Tensor>(values[i])) {
          s.push_back(values[i].cast<Tensor>());  // keeps its sequence offsets (lod_level > 1)
        } else {
          s.push_back(ToTensor(values[i], "DataFeeder: variable '" + names[i] + "'", dtypes_[i]));
        }
      }
      batch.push_back(std::move(s));
    }
    FeedMap fed;
    {
      py::gil_scoped_release release;
      fed = feeder_.Feed(batch);
      batch.clear();
    }
    DrainReleases();
    py::dict out;
    for (const auto& [name, t] : fed) out[py::str(name)] = py::cast(t);
    return out;
  }

  const std::vector<std::string>& feed_names() const { return feeder_.feed_names(); }

 private:
  io::DataFeeder feeder_;
  std::vector<DType> dtypes_;
};

void BindCheckpoints(py::module_& m) {
  m.def("save_persistables",
        [](const std::string& dir, const Program& program, const Scope& scope) {
          py::gil_scoped_release release;
          io::SavePersistables(dir, program, scope);
        },
        py::arg("dirname"), py::arg("main_program"), py::arg("scope"));
  m.def("load_persistables",
        [](const std::string& dir, const Program& program, Scope& scope) {
          py::gil_scoped_release release;
          io::LoadPersistables(dir, program, scope);
        },
        py::arg("dirname"), py::arg("main_program"), py::arg("scope"));
  m.def("persistable_names", &io::PersistableNames, py::arg("program"));
  m.def("save_vars",
        [](const std::string& dir, const std::vector<std::string>& names, const Scope& scope) {
          py::gil_scoped_release release;
          io::SaveVars(dir, names, scope);
        },
        py::arg("dirname"), py::arg("names"), py::arg("scope"));
  m.def("save_inference_model",
        [](const std::string& dir, const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
           const Executor& exe, const Program& main, const Scope& scope, const io::InferenceModelFiles& files) {
          py::gil_scoped_release release;
          io::SaveInferenceModel(dir, feeds, fetches, exe, main, scope, files);
        },
        py::arg("dirname"), py::arg("feeded_var_names"), py::arg("target_vars"), py::arg("executor"),
        py::arg("main_program"), py::arg("scope"), py::arg("files"));
  m.def("load_inference_model",
        [](const std::string& dir, Scope& scope, const io::InferenceModelFiles& files) {
          io::InferenceModel model;
          {
            py::gil_scoped_release release;
            model = io::LoadInferenceModel(dir, scope, files);
          }
          return py::make_tuple(std::move(model.program), model.feed_names, model.fetch_names);
        },
        py::arg("dirname"), py::arg("scope"), py::arg("files"));
}

// Paddle's tensor serialisation: combined parameter files and blobs.
void BindPaddleTensors(py::module_& m) {
  py::class_<io::InferenceModelFiles>(m, "InferenceModelFiles")
      .def(py::init([](std::string model, std::string params, bool export_for_deployment, bool program_only) {
             return io::InferenceModelFiles{std::move(model), std::move(params), export_for_deployment, program_only};
           }),
           py::arg("model_filename") = "", py::arg("params_filename") = "", py::arg("export_for_deployment") = true,
           py::arg("program_only") = false)
      .def("paddle_layout", &io::InferenceModelFiles::paddle_layout,
           "True when the files are laid out as Paddle's (see inference_model.h).");
  m.def("normalize_program", &io::NormalizeProgram, py::arg("program"), py::arg("feed_names"),
        py::arg("fetch_names"));
  m.def("serialize_inference_program",
        [](const Program& main, const std::vector<std::string>& feeds, const std::vector<std::string>& fetches) {
          return py::bytes(io::SerializeInferenceProgram(main, feeds, fetches));
        },
        py::arg("program"), py::arg("feed_names"), py::arg("fetch_names"));
  m.def("load_inference_model_from_memory",
        [](const py::bytes& model, const py::bytes& params, Scope& scope) {
          std::string model_bytes = model, params_bytes = params;
          io::InferenceModel loaded;
          {
            py::gil_scoped_release release;
            loaded = io::LoadInferenceModelFromMemory(model_bytes, params_bytes, scope);
          }
          return py::make_tuple(std::move(loaded.program), loaded.feed_names, loaded.fetch_names);
        },
        py::arg("model"), py::arg("params"), py::arg("scope"));
  m.def("manifest_names", [](const std::string& dir) {
    std::vector<std::string> names;
    for (const io::ManifestEntry& e : io::ReadManifest(dir)) names.push_back(e.name);
    return names;
  }, py::arg("dirname"), "The variables of Flotilla's checkpoint `dirname` (its MANIFEST).");
  m.def("save_var_files",
        [](const std::string& dir, const std::vector<std::string>& names, const Scope& scope) {
          py::gil_scoped_release release;
          io::SaveVarFiles(dir, names, scope);
        },
        py::arg("dirname"), py::arg("names"), py::arg("scope"));
  m.def("load_vars_from_dir",
        [](const std::string& dir, const std::vector<std::string>& names, Scope& scope, const Program* program) {
          py::gil_scoped_release release;
          io::LoadVarsFromDir(dir, names, scope, program);
        },
        py::arg("dirname"), py::arg("names"), py::arg("scope"), py::arg("program") = nullptr);
  m.def("save_combined",
        [](const std::string& path, const std::vector<std::string>& names, const Scope& scope) {
          py::gil_scoped_release release;
          io::SaveCombined(path, names, scope);
        },
        py::arg("path"), py::arg("names"), py::arg("scope"));
  m.def("load_combined",
        [](const std::string& path, const std::vector<std::string>& names, Scope& scope, const Program* program) {
          py::gil_scoped_release release;
          io::LoadCombined(path, names, scope, program);
        },
        py::arg("path"), py::arg("names"), py::arg("scope"), py::arg("program") = nullptr);
  m.def("serialize_vars",
        [](const std::vector<std::string>& names, const Scope& scope) {
          std::string bytes;
          {
            py::gil_scoped_release release;
            bytes = io::SerializePaddleVars(names, scope);
          }
          return py::bytes(bytes);
        },
        py::arg("names"), py::arg("scope"));
  m.def("deserialize_vars",
        [](const py::bytes& data, const std::vector<std::string>& names, Scope& scope, const std::string& what,
           const Program* program) {
          std::string_view bytes = data;
          py::gil_scoped_release release;
          io::DeserializePaddleVars(bytes, names, scope, what, program);
        },
        py::arg("data"), py::arg("names"), py::arg("scope"), py::arg("what"), py::arg("program") = nullptr);
}

}  // namespace

void BindIo(py::module_& parent) {
  py::module_ m = parent.def_submodule("io", "Checkpoints, inference models, feeders, datasets.");
  BindCheckpoints(m);
  BindPaddleTensors(m);
  py::class_<Feeder>(m, "DataFeeder", "Minibatches of samples → feed dicts of Tensors.")
      .def(py::init<const std::vector<Variable>&>(), py::arg("feed_list"))
      .def("feed", &Feeder::Feed, py::arg("minibatch"), "The feed dict {name: Tensor} of one minibatch.")
      .def_property_readonly("feed_names", &Feeder::feed_names);
  py::class_<SampleIterator>(m, "SampleIterator")
      .def("__iter__", [](SampleIterator& it) -> SampleIterator& { return it; })
      .def("__next__", &SampleIterator::Next);
  m.def("uci_housing_train", [] { return SampleIterator(io::uci_housing::Train()); },
        "Samples (features[13] float32, price[1] float32) of the UCI housing training split.");
  m.def("uci_housing_test", [] { return SampleIterator(io::uci_housing::Test()); },
        "Samples of the UCI housing test split.");
  BindDataset(m);
}

}  // namespace flotilla::python
