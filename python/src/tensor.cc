#include "tensor.h"

#include <cstring>
#include <memory>

#include "bindings.h"
#include "flotilla/common/enforce.h"

namespace flotilla::python {

namespace {

std::optional<DType> DTypeOfNumpy(const py::dtype& dt) {
  if (dt.is(py::dtype::of<float>())) return DType::kFloat32;
  if (dt.is(py::dtype::of<double>())) return DType::kFloat64;
  if (dt.is(py::dtype::of<int32_t>())) return DType::kInt32;
  if (dt.is(py::dtype::of<int64_t>())) return DType::kInt64;
  // Equal but distinct dtype objects (e.g. from np.dtype('<f4')).
  switch (dt.kind()) {
    case 'f':
      if (dt.itemsize() == 4) return DType::kFloat32;
      if (dt.itemsize() == 8) return DType::kFloat64;
      break;
    case 'i':
      if (dt.itemsize() == 4) return DType::kInt32;
      if (dt.itemsize() == 8) return DType::kInt64;
      break;
    default:
      break;
  }
  return std::nullopt;
}

bool Wrappable(const py::array& a) {
  constexpr int kNeed = py::array::c_style;
  int flags = py::detail::array_proxy(a.ptr())->flags;
  bool native = a.dtype().byteorder() != '>';
  return (flags & kNeed) && (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) &&
         (flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) && native;
}

Dims ShapeOf(const py::array& a) {
  Dims dims(a.ndim());
  for (py::ssize_t i = 0; i < a.ndim(); ++i) dims[i] = a.shape(i);
  return dims;
}

Tensor Wrap(const py::array& a, DType dtype) {
  // The buffer's release runs wherever the last Tensor copy dies, possibly
  // on a thread without the GIL.
  auto* owner = new py::object(a);
  auto release = [owner] {
    if (!Py_IsInitialized()) return;  // interpreter gone: nothing to release into
    py::gil_scoped_acquire gil;
    delete owner;
  };
  auto buffer = std::make_shared<Buffer>(const_cast<void*>(a.data()), static_cast<size_t>(a.nbytes()),
                                         std::move(release));
  return Tensor::Wrap(std::move(buffer), dtype, ShapeOf(a));
}

}  // namespace

py::dtype NumpyDType(DType dtype) {
  return VisitDType(dtype, []<typename T>() { return py::dtype::of<T>(); });
}

DType ToDType(const py::handle& dtype) {
  if (py::isinstance<py::str>(dtype)) {
    std::string name = dtype.cast<std::string>();
    if (name == "FP32" || name == "VarType.FP32") return DType::kFloat32;
    if (name == "FP64" || name == "VarType.FP64") return DType::kFloat64;
    if (name == "INT32" || name == "VarType.INT32") return DType::kInt32;
    if (name == "INT64" || name == "VarType.INT64") return DType::kInt64;
  }
  py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype));
  std::optional<DType> d = DTypeOfNumpy(dt);
  FLOTILLA_ENFORCE(d.has_value(), "dtype ", py::str(dt).cast<std::string>(),
                   " is not supported (float32, float64, int32 or int64)");
  return *d;
}

Tensor ToTensor(const py::handle& value, const std::string& what, std::optional<DType> want) {
  py::array a;
  if (py::isinstance<py::array>(value)) {
    a = py::reinterpret_borrow<py::array>(value);
  } else {
    py::object np = py::module_::import("numpy");
    a = want ? np.attr("asarray")(value, NumpyDType(*want)) : np.attr("asarray")(value);
  }
  std::optional<DType> dtype = DTypeOfNumpy(a.dtype());
  FLOTILLA_ENFORCE(dtype.has_value(), what, ": dtype ", py::str(a.dtype()).cast<std::string>(),
                   " is not supported (float32, float64, int32 or int64)");
  if (Wrappable(a)) return Wrap(a, *dtype);
  py::array copy = py::module_::import("numpy").attr("ascontiguousarray")(a, NumpyDType(*dtype));
  return Wrap(copy, *dtype);
}

py::array ToNumpy(const Tensor& tensor) {
  std::vector<py::ssize_t> shape(tensor.dims().begin(), tensor.dims().end());
  py::array out(NumpyDType(tensor.dtype()), shape);
  if (tensor.nbytes() > 0) std::memcpy(out.mutable_data(), tensor.raw_data(), tensor.nbytes());
  return out;
}

void BindTensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor", R"doc(
A dense tensor of the C++ core (Paddle's LoDTensor). `np.array(t)` copies it
out; `t.set(ndarray, place)` replaces its contents.)doc")
      .def(py::init<>())
      .def("shape", [](const Tensor& t) { return std::vector<int64_t>(t.dims()); },
           "The tensor's shape as a list.")
      .def_property_readonly("dtype", [](const Tensor& t) { return std::string(DTypeName(t.dtype())); })
      .def("_is_initialized", &Tensor::initialized)
      .def("_data_ptr", [](Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()); },
           "Address of the first element (for tests of zero-copy feeds).")
      .def(
          "set",
          [](Tensor& t, const py::handle& value, const py::handle& /*place*/) {
            Tensor src = ToTensor(value, "Tensor.set");
            t.CopyFrom(src);
          },
          py::arg("array"), py::arg("place") = py::none(),
          "Copies `array` into this tensor (shape and dtype follow the array).")
      .def("__array__",
           [](const Tensor& t, const py::object& dtype) {
             py::array a = ToNumpy(t);
             return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
           },
           py::arg("dtype") = py::none())
      .def("__repr__", [](const Tensor& t) { return "Tensor(" + t.DebugString() + ")"; });
  m.def("as_tensor", [](const py::handle& v) { return ToTensor(v, "as_tensor"); },
        "A Tensor over `value` (no copy for a contiguous array of a supported dtype).");
}

}  // namespace flotilla::python
