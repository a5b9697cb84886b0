// UCI Boston housing (Paddle's paddle.dataset.uci_housing), read from the
// copy Debian's python3-sklearn ships:
//   /usr/lib/python3/dist-packages/sklearn/datasets/data/boston_house_prices.csv
// or from $FLOTILLA_DATA_HOME/boston_house_prices.csv when that is set.
//
// As in Paddle, each of the 13 features becomes (x - mean) / (max - min)
// over all 506 rows; the first 80% of rows (404) are the training set, the
// rest (102) the test set. Samples: x float32 [13], y float32 [1] (MEDV, in
// $1000s, not normalised). The file is parsed once per process (thread-safe).
#pragma once

#include <string>

#include "flotilla/io/reader.h"

namespace flotilla::io::uci_housing {

inline constexpr int kNumFeatures = 13;

// The csv this process reads.
std::string DataPath();

// Reader creators. Throw NotFound naming the path, the Debian package that
// provides it and FLOTILLA_DATA_HOME when the file is missing; Corruption
// naming the file and line when it does not parse.
Reader Train();
Reader Test();

}  // namespace flotilla::io::uci_housing
