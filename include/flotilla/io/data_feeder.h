// DataFeeder: turns a batch of samples into the feed map of an Executor run
// (Paddle's fluid.DataFeeder).
//
// Field i of every sample feeds feed_list[i]. The fed tensor has the batch
// dimension prepended: variable shape [-1, 13] and samples x [13] give a
// [batch, 13] tensor. A variable of lod_level 1 takes a sequence per sample
// instead: each sample's field holds any number of rows of the variable's
// per-row shape (ids [n] or [n, 1] for shape [-1, 1]); the fed tensor packs
// them, [Σn, ...], with offsets [[0, n0, n0+n1, ...]] (Paddle's LoDTensor).
// A variable of lod_level L > 1 takes, per sample, rows carrying L - 1
// levels of offsets (a paragraph: its sentences' offsets over its words);
// the fed tensor has L levels, the outermost counting each sample's items.
// Stateless after construction; Feed() is thread-safe.
#pragma once

#include <string>
#include <vector>

#include "flotilla/core/place.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/program.h"
#include "flotilla/io/reader.h"

namespace flotilla::io {

class DataFeeder {
 public:
  // Copies what it needs from the variables (name, dtype, shape); the program
  // need not outlive the feeder.
  DataFeeder(const std::vector<Variable>& feed_list, Place place = CPUPlace());

  // Throws InvalidArgument for an empty batch, a sample with the wrong number
  // of fields, or a field whose dtype or element count does not match its
  // variable — naming the feed variable, the sample index and the expected
  // per-sample shape.
  FeedMap Feed(const std::vector<Sample>& batch) const;

  const std::vector<std::string>& feed_names() const { return names_; }

 private:
  struct Slot {
    std::string name;
    DType dtype;
    Dims sample_dims;  // variable shape without the batch dimension
    int lod_level = 0;
  };
  Tensor FeedSlot(size_t slot, const std::vector<Sample>& batch) const;
  Tensor FeedSequences(size_t slot, const std::vector<Sample>& batch) const;
  Tensor FeedNested(size_t slot, const std::vector<Sample>& batch) const;

  std::vector<Slot> slots_;
  std::vector<std::string> names_;
  Place place_;
};

}  // namespace flotilla::io
