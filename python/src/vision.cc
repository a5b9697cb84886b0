// Image classification (flotilla._core.vision): the C++ models (ResNet with
// Paddle's parameter names, LeNet) and their blocks, and the ImageNet-layout
// reader. The models append to the default programs exactly as the C++
// train_with_fleet builds them; Python only names them (flotilla.vision).
#include "bindings.h"
#include "flotilla/io/datasets/imagenet.h"
#include "flotilla/models/resnet.h"
#include "tensor.h"

namespace flotilla::python {

namespace {

void BindModels(py::module_& m) {
  m.def("resnet", &models::ResNet, py::arg("image"), py::arg("layers"), py::arg("class_dim"),
        "ResNet-18/34/50/101/152 logits [N, class_dim] with Paddle's parameter names.");
  m.def("resnet_depth", &models::ResNetDepth, py::arg("model"),
        "The depth of a model name (\"ResNet50\" -> 50); InvalidArgumentError naming the choices.");
  m.def("conv_bn_layer", &models::ConvBnLayer, py::arg("input"), py::arg("num_filters"), py::arg("filter_size"),
        py::arg("stride"), py::arg("act"), py::arg("name"));
  m.def("basic_block", &models::BasicBlock, py::arg("input"), py::arg("num_filters"), py::arg("stride"),
        py::arg("is_first"), py::arg("name"));
  m.def("bottleneck_block", &models::BottleneckBlock, py::arg("input"), py::arg("num_filters"),
        py::arg("stride"), py::arg("name"));
  m.def("lenet", &models::LeNet, py::arg("image"), py::arg("class_dim"));
}

io::ImageNetOptions ReaderOptions(const py::dict& kw) {
  io::ImageNetOptions o;
  auto get = [&kw](const char* key, auto& field) {
    if (kw.contains(key)) field = kw[key].cast<std::decay_t<decltype(field)>>();
  };
  get("data_dir", o.data_dir);
  get("list", o.list);
  get("train", o.train);
  get("image_size", o.image_size);
  get("resize_short", o.resize_short);
  get("lower_scale", o.lower_scale);
  get("flip", o.flip);
  get("mean", o.mean);
  get("std", o.std);
  get("batch_size", o.batch_size);
  get("num_workers", o.num_workers);
  get("prefetch", o.prefetch);
  get("rank", o.rank);
  get("nranks", o.nranks);
  get("shuffle", o.shuffle);
  get("seed", o.seed);
  get("skip_bad_images", o.skip_bad_images);
  get("drop_last", o.drop_last);
  get("even_shards", o.even_shards);
  return o;
}

// The next batch as (image, label, skipped) NumPy arrays over the batch's
// own buffers, or None at the epoch's end. Waits for decoding without the GIL.
py::object Next(io::ImageNetReader& reader) {
  std::optional<io::ImageBatch> batch;
  {
    Interruptible interruptible;
    py::gil_scoped_release release;
    batch = reader.Next();
  }
  if (!batch) return py::none();
  return py::make_tuple(AdoptAsNumpy(std::move(batch->image)), AdoptAsNumpy(std::move(batch->label)),
                        batch->skipped);
}

void BindImageNetReader(py::module_& m) {
  py::class_<io::ImageNetReader>(m, "ImageNetReader",
                                 "Decodes and augments an ImageNet-layout list on worker threads.")
      .def(py::init([](const py::dict& options) {
             io::ImageNetOptions o = ReaderOptions(options);
             py::gil_scoped_release release;
             return std::make_unique<io::ImageNetReader>(std::move(o));
           }),
           py::arg("options"), "Options by the C++ ImageNetOptions field names.")
      .def_property_readonly("size", &io::ImageNetReader::size)
      .def_property_readonly("batches_per_epoch", &io::ImageNetReader::batches_per_epoch)
      .def_property_readonly("num_classes", &io::ImageNetReader::num_classes)
      .def("start_epoch", &io::ImageNetReader::StartEpoch, py::arg("epoch"), py::call_guard<py::gil_scoped_release>())
      .def("next", &Next, "(image [N, 3, S, S] float32, label [N, 1] int64, skipped) or None at the end.");
  // The C++ defaults, as the float32 values the reader normalises with.
  const io::ImageNetOptions defaults;
  m.attr("IMAGENET_MEAN") = py::cast(defaults.mean);
  m.attr("IMAGENET_STD") = py::cast(defaults.std);
}

}  // namespace

void BindVision(py::module_& m) {
  py::module_ v = m.def_submodule("vision", "Image-classification models and the ImageNet-layout reader.");
  BindModels(v);
  BindImageNetReader(v);
}

}  // namespace flotilla::python
