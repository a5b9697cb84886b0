// Paddle's Dataset API (flotilla._core.io.Dataset): the C++ io::Dataset
// with its state; flotilla.distributed.fleet.dataset gives it Paddle's
// names. Loading releases the GIL; batches cross as NumPy arrays.
#include <pybind11/numpy.h>
#include <pybind11/functional.h>

#include "bindings.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/io/dataset.h"
#include "flotilla/io/dataset_feed.h"
#include "flotilla/io/dataset_trainer.h"
#include "interrupt.h"
#include "tensor.h"

namespace flotilla::python {

namespace {

template <typename T>
py::array_t<T> ToArray(const std::vector<T>& values) {
  py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

// {slot name: (values, offsets)}: values int64 or float32, offsets int64
// with records + 1 entries (the slot's LoD).
py::dict BatchToDict(const io::SlotColumns& batch) {
  py::dict out;
  for (size_t s = 0; s < batch.specs.size(); ++s) {
    const io::SlotValues& v = batch.slots[s];
    py::object values = batch.specs[s].type == io::SlotType::kInt64 ? py::object(ToArray(v.int64s))
                                                                     : py::object(ToArray(v.floats));
    out[py::str(batch.specs[s].name)] = py::make_tuple(values, ToArray(v.offsets));
  }
  return out;
}

using SlotTuple = std::tuple<std::string, std::string, std::vector<int64_t>>;

void SetUseVar(io::Dataset& ds, const std::vector<SlotTuple>& slots) {
  std::vector<io::SlotSpec> specs;
  for (const auto& [name, type, shape] : slots) specs.push_back({name, io::SlotTypeFromString(type), shape});
  ds.SetUseVar(std::move(specs));
}

// ({slot name: Tensor}, {sequence slot name: offsets}) of batch `index`.
py::tuple Feed(const io::Dataset& ds, int64_t index) {
  io::SlotFeeds feeds;
  {
    py::gil_scoped_release release;
    feeds = io::ToFeeds(ds.Batch(index));
  }
  py::dict tensors, offsets;
  for (const auto& [name, t] : feeds.tensors) tensors[py::str(name)] = py::cast(t);
  for (const auto& [name, o] : feeds.offsets) offsets[py::str(name)] = ToArray(o);
  return py::make_tuple(tensors, offsets);
}

std::vector<SlotTuple> UseVar(const io::Dataset& ds) {
  std::vector<SlotTuple> out;
  for (const io::SlotSpec& s : ds.use_var()) out.emplace_back(s.name, io::SlotTypeName(s.type), s.dense_shape);
  return out;
}

void SetAllowEmptySlots(io::Dataset& ds, bool allow) {
  io::MultiSlotParserOptions options;
  options.allow_empty_slots = allow;
  ds.SetParserOptions(options);
}

// Calls `consume` with each batch's dict, the GIL held only around the call.
void ForEachBatch(const io::Dataset& ds, const std::function<void(py::dict)>& consume) {
  py::gil_scoped_release release;
  ds.ForEachBatch([&](const io::SlotColumns& batch) {
    py::gil_scoped_acquire acquire;
    consume(BatchToDict(batch));
  });
}

// train_from_dataset / infer_from_dataset with the GIL released; lines are
// printed through Python's print (so redirections of sys.stdout see them).
py::dict RunFromDataset(const Program& program, const io::Dataset& ds, Scope* scope, int threads,
                        const std::vector<std::string>& fetch_list, const std::vector<std::string>& fetch_info,
                        int64_t print_period, bool debug, bool infer) {
  io::DatasetTrainOptions opt;
  opt.threads = threads;
  opt.fetch_list = fetch_list;
  opt.fetch_info = fetch_info;
  opt.print_period = print_period;
  opt.debug = debug;
  opt.print = [](const std::string& line) {
    py::gil_scoped_acquire acquire;
    py::print(line, py::arg("flush") = true);
  };
  // A parameter-server worker pulls the next batch's sparse rows while the
  // current batch runs (GEO, async).
  if (fleet::default_fleet().initialized() && fleet::is_worker()) {
    opt.on_next_feed = [](const FeedMap& next) { fleet::prefetch_sparse(next); };
  }
  io::DatasetTrainStats stats;
  {
    Interruptible interruptible;
    py::gil_scoped_release release;
    stats = infer ? io::InferFromDataset(program, ds, scope, opt) : io::TrainFromDataset(program, ds, scope, opt);
  }
  DrainReleases();
  py::dict out;
  out["batches"] = stats.batches;
  out["instances"] = stats.instances;
  out["seconds"] = stats.seconds;
  out["batches_per_thread"] = stats.batches_per_thread;
  return out;
}

}  // namespace

void BindDataset(py::module_& m) {
  using io::Dataset;
  py::class_<Dataset>(m, "Dataset", "Paddle's InMemoryDataset / QueueDataset (C++ io::Dataset).")
      .def(py::init([](const std::string& kind) { return std::make_unique<Dataset>(io::DatasetKindFromString(kind)); }),
           py::arg("kind"))
      .def_property_readonly("kind", [](const Dataset& d) {
        return d.kind() == io::DatasetKind::kInMemory ? "InMemoryDataset" : "QueueDataset";
      })
      .def("set_use_var", &SetUseVar, py::arg("slots"),
           "[(name, 'uint64' | 'int64' | 'float', dense shape or [] for a sequence slot), ...]")
      .def("use_var", &UseVar)
      .def("set_pipe_command", &Dataset::SetPipeCommand, py::arg("command"))
      .def_property_readonly("pipe_command", &Dataset::pipe_command)
      .def("set_filelist", &Dataset::SetFileList, py::arg("files"))
      .def_property_readonly("filelist", &Dataset::file_list)
      .def("set_batch_size", &Dataset::SetBatchSize, py::arg("batch_size"))
      .def_property_readonly("batch_size", &Dataset::batch_size)
      .def("set_thread_num", &Dataset::SetThreadNum, py::arg("thread_num"))
      .def_property_readonly("thread_num", &Dataset::thread_num)
      .def("set_allow_empty_slots", &SetAllowEmptySlots, py::arg("allow"))
      .def("load_into_memory", &Dataset::LoadIntoMemory, py::call_guard<py::gil_scoped_release>())
      .def("preload_into_memory", &Dataset::PreloadIntoMemory)
      .def("wait_preload_done", &Dataset::WaitPreloadDone, py::call_guard<py::gil_scoped_release>())
      .def("local_shuffle", &Dataset::LocalShuffle, py::arg("seed"), py::call_guard<py::gil_scoped_release>())
      .def("release_memory", &Dataset::ReleaseMemory)
      .def("memory_data_size", &Dataset::MemoryDataSize)
      .def("shuffle_data_size", &Dataset::ShuffleDataSize)
      .def("batch_count", &Dataset::BatchCount)
      .def("batch", [](const Dataset& d, int64_t i) { return BatchToDict(d.Batch(i)); }, py::arg("index"),
           "{slot name: (values, offsets)} of batch `index` in memory.")
      .def("feed", &Feed, py::arg("index"),
           "({slot name: Tensor}, {sequence slot name: offsets}) of batch `index`: feeds for Executor.run.")
      .def("for_each_batch", &ForEachBatch, py::arg("consume"),
           "Calls consume({slot name: (values, offsets)}) per batch (a QueueDataset streams its files).");
  m.def("run_from_dataset", &RunFromDataset, py::arg("program"), py::arg("dataset"), py::arg("scope"),
        py::arg("threads"), py::arg("fetch_list"), py::arg("fetch_info"), py::arg("print_period"),
        py::arg("debug"), py::arg("infer"),
        "Executor.train_from_dataset / infer_from_dataset in C++ (io::TrainFromDataset): `threads` Hogwild "
        "workers over the dataset's batches; returns {batches, instances, seconds, batches_per_thread}.");
}

}  // namespace flotilla::python
