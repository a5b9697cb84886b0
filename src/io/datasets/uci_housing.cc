// Boston housing from python3-sklearn's csv, normalised as Paddle's
// paddle.dataset.uci_housing does.
#include "flotilla/io/datasets/uci_housing.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/strings.h"

namespace flotilla::io::uci_housing {
namespace {

constexpr const char* kFileName = "boston_house_prices.csv";
constexpr const char* kDebianPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/";
constexpr int kColumns = kNumFeatures + 1;
constexpr double kTrainRatio = 0.8;

using Row = std::array<double, kColumns>;

// Line 1 holds the row count, line 2 the column names, then the rows.
std::vector<Row> ParseCsv(const std::string& text, const std::string& path) {
  std::vector<std::string> lines = Split(text, '\n');
  FLOTILLA_CHECK(lines.size() >= 2, Corruption, "'", path, "' has no header lines");
  int64_t expected = ParseInt(Trim(Split(lines[0], ',').at(0)), "row count of " + path);
  std::vector<Row> rows;
  for (size_t i = 2; i < lines.size(); ++i) {
    if (Trim(lines[i]).empty()) continue;
    std::vector<std::string> cells = Split(Trim(lines[i]), ',', /*skip_empty=*/false);
    FLOTILLA_CHECK(cells.size() == kColumns, Corruption, "'", path, "' line ", i + 1, " has ",
                   cells.size(), " columns, expected ", kColumns);
    Row row;
    for (int c = 0; c < kColumns; ++c) {
      row[c] = ParseDouble(cells[c], StrCat(path, " line ", i + 1));
    }
    rows.push_back(row);
  }
  FLOTILLA_CHECK(static_cast<int64_t>(rows.size()) == expected && !rows.empty(), Corruption, "'",
                 path, "' holds ", rows.size(), " rows but its header says ", expected);
  return rows;
}

// (x - mean) / (max - min) per feature over all rows; the target is kept.
void Normalise(std::vector<Row>& rows) {
  for (int c = 0; c < kNumFeatures; ++c) {
    double lo = rows[0][c], hi = rows[0][c], sum = 0;
    for (const Row& r : rows) {
      lo = std::min(lo, r[c]);
      hi = std::max(hi, r[c]);
      sum += r[c];
    }
    double mean = sum / static_cast<double>(rows.size());
    double range = hi > lo ? hi - lo : 1.0;
    for (Row& r : rows) r[c] = (r[c] - mean) / range;
  }
}

Sample ToSample(const Row& r) {
  std::vector<float> x(r.begin(), r.begin() + kNumFeatures);
  return {Tensor::FromVector<float>(x, {kNumFeatures}),
          Tensor::FromVector<float>({static_cast<float>(r[kNumFeatures])}, {1})};
}

struct Split {
  std::shared_ptr<const std::vector<Sample>> train, test;
};

Split Load() {
  const std::string path = DataPath();
  FLOTILLA_CHECK(FileExists(path), NotFound, "UCI housing data '", path,
                 "' is missing: install the Debian package python3-sklearn (it ships ", kDebianPath,
                 kFileName, ") or set FLOTILLA_DATA_HOME to a directory holding ", kFileName);
  std::vector<Row> rows = ParseCsv(ReadFile(path), path);
  Normalise(rows);
  const size_t offset = static_cast<size_t>(static_cast<double>(rows.size()) * kTrainRatio);
  auto train = std::make_shared<std::vector<Sample>>();
  auto test = std::make_shared<std::vector<Sample>>();
  for (size_t i = 0; i < rows.size(); ++i) (i < offset ? train : test)->push_back(ToSample(rows[i]));
  return {train, test};
}

// Parsed once per path; a failed load is retried on the next call.
Split Cached() {
  static std::mutex mu;
  static std::map<std::string, Split> cache;
  std::lock_guard<std::mutex> lock(mu);
  const std::string path = DataPath();
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, Load()).first;
  return it->second;
}

}  // namespace

std::string DataPath() {
  auto home = env::Get("FLOTILLA_DATA_HOME");
  if (home && !home->empty()) return *home + "/" + kFileName;
  return std::string(kDebianPath) + kFileName;
}

Reader Train() { return FromSamples(Cached().train); }
Reader Test() { return FromSamples(Cached().test); }

}  // namespace flotilla::io::uci_housing
