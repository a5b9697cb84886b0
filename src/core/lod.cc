#include "flotilla/core/lod.h"

#include <algorithm>
#include <sstream>

#include "flotilla/common/enforce.h"

namespace flotilla {

LoD LengthsToOffsets(const std::vector<std::vector<int64_t>>& lengths) {
  LoD lod;
  lod.reserve(lengths.size());
  for (const auto& level : lengths) {
    LoDLevel offsets(level.size() + 1, 0);
    for (size_t i = 0; i < level.size(); ++i) {
      FLOTILLA_ENFORCE(level[i] >= 0, "sequence length ", level[i], " at position ", i,
                       " is negative");
      offsets[i + 1] = offsets[i] + level[i];
    }
    lod.push_back(std::move(offsets));
  }
  return lod;
}

std::vector<std::vector<int64_t>> OffsetsToLengths(const LoD& lod) {
  std::vector<std::vector<int64_t>> lengths;
  lengths.reserve(lod.size());
  for (const auto& level : lod) {
    std::vector<int64_t> l;
    for (size_t i = 1; i < level.size(); ++i) l.push_back(level[i] - level[i - 1]);
    lengths.push_back(std::move(l));
  }
  return lengths;
}

namespace {

// The first rule `lod` breaks for a tensor of `rows` rows; "" when none.
std::string LoDProblem(const LoD& lod, int64_t rows) {
  for (size_t l = 0; l < lod.size(); ++l) {
    const LoDLevel& level = lod[l];
    const std::string at = "level " + std::to_string(l);
    if (level.size() < 2) return at + " holds no sequence (fewer than 2 offsets)";
    if (level.front() != 0) return at + " does not start at 0";
    if (!std::is_sorted(level.begin(), level.end())) return at + " decreases";
    if (l + 1 < lod.size() && level.back() != static_cast<int64_t>(lod[l + 1].size()) - 1) {
      return at + " ends at " + std::to_string(level.back()) + " but level " + std::to_string(l + 1) +
             " holds " + std::to_string(lod[l + 1].size() - 1) + " sequences";
    }
  }
  if (!lod.empty() && rows >= 0 && lod.back().back() != rows) {
    return "the last level ends at " + std::to_string(lod.back().back()) + " but the tensor has " +
           std::to_string(rows) + " rows";
  }
  return "";
}

}  // namespace

bool IsValidLoD(const LoD& lod, int64_t rows) { return LoDProblem(lod, rows).empty(); }

void CheckLoD(const LoD& lod, int64_t rows, const std::string& what) {
  const std::string problem = LoDProblem(lod, rows);
  FLOTILLA_ENFORCE(problem.empty(), what, ": invalid LoD ", LoDToString(lod), ": ", problem);
}

std::string LoDToString(const LoD& lod) {
  std::ostringstream out;
  out << "[";
  for (size_t l = 0; l < lod.size(); ++l) {
    out << (l ? ", [" : "[");
    for (size_t i = 0; i < lod[l].size(); ++i) out << (i ? ", " : "") << lod[l][i];
    out << "]";
  }
  out << "]";
  return out.str();
}

}  // namespace flotilla
