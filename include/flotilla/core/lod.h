// LoD (Paddle's "level of detail"): the sequence structure of a tensor whose
// first dimension packs variable-length sequences one after another.
//
// A LoD is a list of levels, outermost first; each level is a list of
// offsets starting at 0 and never decreasing. The last level indexes rows of
// the tensor (its last offset is the tensor's first dimension); every other
// level indexes the sequences of the level below it (its last offset is the
// number of sequences there). Sequence i of a level spans
// [level[i], level[i+1]); equal neighbours are an empty sequence.
//
//   rows a b c d e, lengths [[2, 0, 3]]  →  offsets [[0, 2, 2, 5]]
//
// Plain functions over plain vectors: they allocate, never block, and are
// safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flotilla {

using LoDLevel = std::vector<int64_t>;
using LoD = std::vector<LoDLevel>;

// Offsets from per-sequence lengths (Paddle's recursive_sequence_lengths):
// [[2, 0, 3]] → [[0, 2, 2, 5]]. Throws InvalidArgument on a negative length.
LoD LengthsToOffsets(const std::vector<std::vector<int64_t>>& lengths);
// The inverse: [[0, 2, 2, 5]] → [[2, 0, 3]]. Expects a valid LoD.
std::vector<std::vector<int64_t>> OffsetsToLengths(const LoD& lod);

// True when `lod` is well formed for a tensor of `rows` rows (see above); an
// empty LoD is valid for any tensor. rows < 0: the row count is not checked.
bool IsValidLoD(const LoD& lod, int64_t rows = -1);
// Throws InvalidArgument naming `what`, the LoD and the first broken rule
// when IsValidLoD(lod, rows) is false.
void CheckLoD(const LoD& lod, int64_t rows, const std::string& what);

// "[[0, 2, 2, 5]]".
std::string LoDToString(const LoD& lod);

}  // namespace flotilla
