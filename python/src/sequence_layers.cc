// Sequence (LoD) layers (into flotilla._core.layers): C++ names and argument
// order; flotilla.sequence_lod gives Paddle's keyword names on top.
#include "bindings.h"
#include "flotilla/api/sequence_layers.h"
#include "tensor.h"

namespace flotilla::python {

void BindSequenceLayers(py::module_& m) {
  m.def("sequence_pool", &layers::sequence_pool, py::arg("input"), py::arg("pool_type"),
        py::arg("is_test") = false, py::arg("pad_value") = 0.0f);
  m.def("sequence_first_step", &layers::sequence_first_step, py::arg("input"));
  m.def("sequence_last_step", &layers::sequence_last_step, py::arg("input"));
  m.def("sequence_softmax", &layers::sequence_softmax, py::arg("input"));
  m.def("sequence_expand", &layers::sequence_expand, py::arg("x"), py::arg("y"), py::arg("ref_level") = -1);
  m.def("sequence_expand_as", &layers::sequence_expand_as, py::arg("x"), py::arg("y"));
  m.def("sequence_pad",
        [](const Variable& x, const Variable& pad_value, int maxlen) {
          layers::SequencePadOutputs o = layers::sequence_pad(x, pad_value, maxlen);
          return py::make_tuple(o.out, o.length);
        },
        py::arg("x"), py::arg("pad_value"), py::arg("maxlen") = -1);
  m.def("sequence_unpad", &layers::sequence_unpad, py::arg("x"), py::arg("length"));
  m.def("sequence_mask",
        [](const Variable& x, int maxlen, const py::handle& dtype) {
          return layers::sequence_mask(x, maxlen, ToDType(dtype));
        },
        py::arg("x"), py::arg("maxlen") = -1, py::arg("dtype") = "int64");
  m.def("sequence_reverse", &layers::sequence_reverse, py::arg("x"));
  m.def("sequence_enumerate", &layers::sequence_enumerate, py::arg("input"), py::arg("win_size"),
        py::arg("pad_value") = 0);
  m.def("sequence_conv", &layers::sequence_conv, py::arg("input"), py::arg("num_filters"),
        py::arg("filter_size") = 3, py::arg("padding_start") = std::nullopt, py::arg("param_attr") = ParamAttr{},
        py::arg("bias_attr") = ParamAttr{}, py::arg("act") = "");
  m.def("sequence_concat", &layers::sequence_concat, py::arg("input"));
  m.def("sequence_reshape", &layers::sequence_reshape, py::arg("input"), py::arg("new_dim"));
  m.def("sequence_slice", &layers::sequence_slice, py::arg("input"), py::arg("offset"), py::arg("length"));
  m.def("lod_reset",
        [](const Variable& x, const py::object& y, const std::vector<int32_t>& target_lod) {
          return layers::lod_reset(x, y.is_none() ? Variable() : y.cast<Variable>(), target_lod);
        },
        py::arg("x"), py::arg("y") = py::none(), py::arg("target_lod") = std::vector<int32_t>{});
  m.def("lod_append", &layers::lod_append, py::arg("x"), py::arg("level"));
}

}  // namespace flotilla::python
