#include "flotilla/io/evaluate.h"

namespace flotilla::io {

double EvaluateMean(Executor& exe, const Program& program, const DataFeeder& feeder,
                    const BatchReader& reader, const std::string& fetch, Scope* scope) {
  double sum = 0;
  int64_t count = 0;
  auto next = reader();
  while (auto batch = next()) {
    Tensor value = exe.Run(program, feeder.Feed(*batch), {fetch}, scope)[0];
    FLOTILLA_ENFORCE(value.numel() == 1 && value.dtype() == DType::kFloat32, "EvaluateMean: '",
                     fetch, "' must be a one-element float32 tensor, got ",
                     DTypeName(value.dtype()), DimsToString(value.dims()));
    auto n = static_cast<int64_t>(batch->size());
    sum += value.data<float>()[0] * static_cast<double>(n);
    count += n;
  }
  return count == 0 ? 0 : sum / static_cast<double>(count);
}

}  // namespace flotilla::io
