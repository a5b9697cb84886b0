// A reader for the ImageNet directory layout of Paddle's image-classification
// scripts: data_dir/train_list.txt and data_dir/val_list.txt, one
// "relative/path.jpeg label" per line, paths relative to data_dir (images
// usually under data_dir/train/ and data_dir/val/).
//
// Batches come out as NCHW float32 images [N, 3, size, size] (normalised
// by mean/std) and int64 labels [N, 1]. JPEGs are decoded and augmented on
// `num_workers` threads, `prefetch` batches ahead of the consumer, so a
// training step does not wait for decoding unless decoding is the slower of
// the two. Training mode: random-resized crop + horizontal flip; evaluation:
// resize the short side, centre crop. Randomness is seeded per (seed, epoch,
// sample), so a run is reproducible whatever the thread timing.
//
// Data-parallel runs: rank r of n reads samples r, r + n, ... of the epoch's
// order (shuffled the same on every rank), by default each rank the same
// number, so every rank runs the same number of steps.
//
// A bad image (unreadable, truncated, not a JPEG) is reported by path and
// skipped (the batch is one shorter) with skip_bad_images, else Next()
// throws Corruption naming the path. A malformed list line throws
// InvalidArgument naming the list file and line when the reader is built.
// One thread consumes a reader; its worker threads end with it.
#pragma once

#include <array>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flotilla/core/tensor.h"
#include "flotilla/core/thread_pool.h"

namespace flotilla::io {

struct ImageNetOptions {
  std::string data_dir;
  std::string list = "train_list.txt";  // relative to data_dir
  bool train = true;
  int image_size = 224;
  int resize_short = 256;     // evaluation only
  double lower_scale = 0.08;  // random-resized crop's smallest area fraction
  bool flip = true;           // random horizontal flip in training
  std::array<float, 3> mean = {0.485f * 255, 0.456f * 255, 0.406f * 255};
  std::array<float, 3> std = {0.229f * 255, 0.224f * 255, 0.225f * 255};
  int batch_size = 32;
  int num_workers = 2;
  int prefetch = 4;
  int rank = 0;
  int nranks = 1;
  bool shuffle = true;
  uint64_t seed = 0;
  bool skip_bad_images = true;
  bool drop_last = false;
  // Every rank the same number of samples (training: the ranks step in
  // lockstep), dropping up to nranks - 1; false (evaluation): every sample
  // is read by exactly one rank.
  bool even_shards = true;
};

struct ImageBatch {
  Tensor image;  // [N, 3, size, size] float32
  Tensor label;  // [N, 1] int64
  int64_t skipped = 0;  // bad images left out of this batch
};

class ImageNetReader {
 public:
  explicit ImageNetReader(ImageNetOptions options);
  ~ImageNetReader();
  ImageNetReader(const ImageNetReader&) = delete;
  ImageNetReader& operator=(const ImageNetReader&) = delete;

  // Samples in the list, and the batches this rank reads per epoch.
  int64_t size() const { return static_cast<int64_t>(samples_.size()); }
  int64_t batches_per_epoch() const;
  // Largest label + 1.
  int num_classes() const { return num_classes_; }

  // Starts epoch `epoch` (dropping what is left of the previous one).
  void StartEpoch(int64_t epoch);
  // The next batch of this epoch, or nullopt at its end. Blocks while the
  // batch is decoded.
  std::optional<ImageBatch> Next();

 private:
  struct Sample {
    std::string path;
    int64_t label;
  };
  ImageBatch Load(std::vector<int64_t> indices, int64_t epoch) const;
  void SubmitNext();

  ImageNetOptions options_;
  std::vector<Sample> samples_;
  int num_classes_ = 0;
  std::vector<int64_t> order_;  // this rank's samples this epoch
  int64_t epoch_ = 0;
  size_t next_ = 0;  // first index of order_ not yet submitted
  std::vector<std::future<ImageBatch>> in_flight_;  // FIFO: front at in_flight_begin_
  size_t in_flight_begin_ = 0;
  std::unique_ptr<ThreadPool> pool_;  // last: its threads end first
};

}  // namespace flotilla::io
