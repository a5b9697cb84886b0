// Evaluation over a whole reader pass: the per-batch value of a scalar fetch
// (a mean loss, an accuracy) averaged with each batch weighted by its size,
// so a short last batch counts for what it holds.
#pragma once

#include <string>

#include "flotilla/framework/executor.h"
#include "flotilla/io/data_feeder.h"
#include "flotilla/io/reader.h"

namespace flotilla::io {

// Runs `program` on every batch of one pass of `reader` and returns the
// size-weighted mean of the [1] float variable `fetch` (0 for an empty pass).
// Throws what Executor::Run throws; InvalidArgument when `fetch` is not a
// one-element float32 tensor.
double EvaluateMean(Executor& exe, const Program& program, const DataFeeder& feeder,
                    const BatchReader& reader, const std::string& fetch, Scope* scope = nullptr);

}  // namespace flotilla::io
