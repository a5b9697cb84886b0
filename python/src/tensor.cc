#include "tensor.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "bindings.h"
#include "flotilla/common/enforce.h"
#include "flotilla/core/blas.h"

namespace flotilla::python {

namespace {

std::mutex release_mu;
std::vector<PyObject*> to_release;  // guarded by release_mu

// Drops one reference to `owner`: now when this thread holds the GIL, else
// at the next DrainReleases (never waits for the GIL: the executor's thread
// must not stall behind a Python thread).
void Release(PyObject* owner) {
  if (!Py_IsInitialized()) return;  // interpreter gone: nothing to release into
  if (PyGILState_Check() != 0) {
    Py_DECREF(owner);
    return;
  }
  std::lock_guard<std::mutex> lock(release_mu);
  to_release.push_back(owner);
}

std::optional<DType> DTypeOfNumpy(const py::dtype& dt) {
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
  int flags = py::detail::array_proxy(a.ptr())->flags;
  bool native = a.dtype().byteorder() != '>';
  return (flags & py::array::c_style) != 0 && (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0 &&
         native;
}

Dims ShapeOf(const py::array& a) {
  Dims dims(a.ndim());
  for (py::ssize_t i = 0; i < a.ndim(); ++i) dims[i] = a.shape(i);
  return dims;
}

Tensor Wrap(const py::array& a, DType dtype) {
  PyObject* owner = a.ptr();
  Py_INCREF(owner);
  auto buffer = std::make_shared<Buffer>(const_cast<void*>(a.data()), static_cast<size_t>(a.nbytes()),
                                         [owner] { Release(owner); });
  return Tensor::Wrap(std::move(buffer), dtype, ShapeOf(a));
}

std::string DTypeString(const py::dtype& dt) { return py::str(py::handle(dt)).cast<std::string>(); }

// Sets `lod` on `t` after checking it against t's rows.
void SetCheckedLoD(Tensor& t, LoD lod) {
  CheckLoD(lod, t.rank() ? t.dim(0) : -1, "LoDTensor of shape " + DimsToString(t.dims()));
  t.set_lod(std::move(lod));
}

}  // namespace

void DrainReleases() {
  std::vector<PyObject*> pending;
  {
    std::lock_guard<std::mutex> lock(release_mu);
    pending.swap(to_release);
  }
  for (PyObject* o : pending) Py_DECREF(o);
}

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
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype));
  } catch (const py::error_already_set&) {
    FLOTILLA_THROW(InvalidArgument, "dtype ", py::repr(dtype).cast<std::string>(),
                   " is not a data type (float32, float64, int32 or int64)");
  }
  std::optional<DType> d = DTypeOfNumpy(dt);
  FLOTILLA_ENFORCE(d.has_value(), "dtype ", DTypeString(dt),
                   " is not supported (float32, float64, int32 or int64)");
  return *d;
}

Tensor ToTensor(const py::handle& value, const std::string& what, std::optional<DType> convert_to) {
  if (py::isinstance<Tensor>(value)) {
    Tensor t = value.cast<Tensor>();
    FLOTILLA_ENFORCE(!convert_to || t.dtype() == *convert_to, what, ": tensor of dtype ",
                     DTypeName(t.dtype()), " where ", DTypeName(*convert_to), " is expected");
    return t;
  }
  py::array a;
  if (py::isinstance<py::array>(value)) {
    a = py::reinterpret_borrow<py::array>(value);
  } else {
    py::object np = py::module_::import("numpy");
    a = convert_to ? np.attr("asarray")(value, NumpyDType(*convert_to)) : np.attr("asarray")(value);
  }
  std::optional<DType> dtype = DTypeOfNumpy(a.dtype());
  if (convert_to && dtype != convert_to) {
    a = py::module_::import("numpy").attr("ascontiguousarray")(a, NumpyDType(*convert_to));
    dtype = convert_to;
  }
  FLOTILLA_ENFORCE(dtype.has_value(), what, ": dtype ", DTypeString(a.dtype()), " (shape ",
                   DimsToString(ShapeOf(a)), ") is not supported (float32, float64, int32 or int64)");
  if (!Wrappable(a)) a = py::module_::import("numpy").attr("ascontiguousarray")(a, NumpyDType(*dtype));
  return Wrap(a, *dtype);
}

py::array ToNumpy(const Tensor& tensor) {
  std::vector<py::ssize_t> shape(tensor.dims().begin(), tensor.dims().end());
  py::array out(NumpyDType(tensor.dtype()), shape);
  if (tensor.nbytes() > 0) std::memcpy(out.mutable_data(), tensor.raw_data(), tensor.nbytes());
  return out;
}

py::array AdoptAsNumpy(Tensor tensor) {
  // Small fetches (a loss, a metric) are copied: cheaper than a capsule
  // owning a heap Tensor, which pays off only for large ones.
  constexpr size_t kCopyBelow = 4096;
  if (tensor.nbytes() < kCopyBelow) return ToNumpy(tensor);
  auto* held = new Tensor(std::move(tensor));
  py::capsule owner(held, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(held->dims().begin(), held->dims().end());
  return py::array(NumpyDType(held->dtype()), shape, held->raw_data(), owner);
}

void BindTensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor", R"doc(
A tensor of the C++ core (Paddle's LoDTensor): dense data, optionally with
sequence offsets (``lod()``, ``recursive_sequence_lengths()``). ``np.array(t)``
copies the data out; ``t.set(ndarray, place)`` replaces it with a copy of the
array.)doc")
      .def(py::init<>())
      .def("shape", [](const Tensor& t) { return std::vector<int64_t>(t.dims()); },
           "The tensor's shape as a list.")
      .def("_dtype", [](const Tensor& t) { return std::string(DTypeName(t.dtype())); },
           "The element type's name (\"float32\", ...).")
      .def("_is_initialized", &Tensor::initialized, "True once the tensor holds data.")
      .def("_data_ptr", [](Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()); },
           "Address of the first element (for tests of zero-copy feeds).")
      .def("lod", [](const Tensor& t) { return t.lod(); },
           "The sequence offsets, outermost level first ([] for a dense tensor).")
      .def("set_lod", [](Tensor& t, const LoD& lod) { SetCheckedLoD(t, lod); }, py::arg("lod"),
           "Sets the offsets; raises InvalidArgumentError when they do not describe the rows.")
      .def("recursive_sequence_lengths", [](const Tensor& t) { return OffsetsToLengths(t.lod()); },
           "The sequence lengths of every level ([[2, 0, 3]] for offsets [[0, 2, 2, 5]]).")
      .def("set_recursive_sequence_lengths",
           [](Tensor& t, const std::vector<std::vector<int64_t>>& lengths) {
             SetCheckedLoD(t, LengthsToOffsets(lengths));
           },
           py::arg("recursive_sequence_lengths"),
           "Sets the offsets from per-level sequence lengths; raises InvalidArgumentError when they do "
           "not describe the rows.")
      .def("has_valid_recursive_sequence_lengths",
           [](const Tensor& t) { return IsValidLoD(t.lod(), t.rank() ? t.dim(0) : -1); },
           "True when the offsets describe the tensor's rows (always for a dense tensor).")
      .def(
          "set",
          [](Tensor& t, const py::handle& value, const py::handle& /*place*/) {
            Tensor copy = t;
            t.CopyFrom(ToTensor(value, "Tensor.set"));
            t.ShareLoD(copy);
          },
          py::arg("array"), py::arg("place") = py::none(),
          "Copies ``array`` into this tensor (shape and dtype follow the array; its offsets stay).")
      .def("__array__",
           [](const Tensor& t, const py::object& dtype) {
             py::array a = ToNumpy(t);
             return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
           },
           py::arg("dtype") = py::none(), "A NumPy copy of the data.")
      .def(
          "_as_type",
          [](const Tensor& t, const std::string& dtype) {
            Tensor out = ToTensor(ToNumpy(t).attr("astype")(dtype), "Tensor._as_type");
            out.ShareLoD(t);
            return out;
          },
          py::arg("dtype"), "A copy converted to ``dtype`` (a name, or Paddle's VarDesc.VarType), offsets kept.")
      .def("_to_dlpack", [](const Tensor& t) { return ToNumpy(t).attr("__dlpack__")(); },
           "A DLPack capsule (\"dltensor\") of a copy of the data, for from_dlpack of any framework.")
      .def("__repr__", [](const Tensor& t) { return "Tensor(" + t.DebugString() + ")"; });
  m.def("as_tensor", [](const py::handle& v) { return ToTensor(v, "as_tensor"); }, py::arg("value"),
        "A Tensor over ``value`` (no copy for a contiguous array of a supported dtype).");
  m.def(
      "blas_kernels",
      [] {
        const blas::Kernels k = blas::KernelInfo();
        py::dict d;
        d["library"] = k.library;
        d["core"] = k.core;
        d["chosen_by"] = k.chosen_by;
        d["cpu"] = k.cpu;
        d["private_instance"] = k.private_instance;
        d["threads"] = k.threads;
        d["summary"] = k.ToString();
        return d;
      },
      "The math backend's kernels in this process (flotilla/core/blas.h): library, core type, what "
      "chose it, the CPU's vector extensions, whether the instance is Flotilla's own, threads.");
}

}  // namespace flotilla::python
