#include "flotilla/io/datasets/imagenet.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/io/image.h"

namespace flotilla::io {
namespace {

constexpr int64_t kMaxImageBytes = int64_t{64} << 20;

std::string ReadImageFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  FLOTILLA_CHECK(in.good(), Corruption, "cannot open image ", path);
  const std::streamoff size = in.tellg();
  FLOTILLA_CHECK(size >= 0 && size <= kMaxImageBytes, Corruption, "image ", path, " has ", size,
                 " bytes (at most ", kMaxImageBytes, " read)");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  FLOTILLA_CHECK(in.good() || in.eof(), Corruption, "cannot read image ", path);
  return bytes;
}

uint64_t SampleSeed(uint64_t seed, int64_t epoch, int64_t index) {
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(epoch), uint32_t(index)};
  uint64_t out[1];
  seq.generate(reinterpret_cast<uint32_t*>(out), reinterpret_cast<uint32_t*>(out) + 2);
  return out[0];
}

}  // namespace

ImageNetReader::ImageNetReader(ImageNetOptions options) : options_(std::move(options)) {
  const ImageNetOptions& o = options_;
  FLOTILLA_ENFORCE(o.batch_size >= 1 && o.image_size >= 1 && o.num_workers >= 1 && o.prefetch >= 1,
                   "ImageNetReader: batch_size, image_size, num_workers and prefetch must be >= 1");
  FLOTILLA_ENFORCE(o.nranks >= 1 && o.rank >= 0 && o.rank < o.nranks, "ImageNetReader: rank ", o.rank,
                   " is not in [0, ", o.nranks, ")");
  const std::string list = o.data_dir + "/" + o.list;
  std::ifstream in(list);
  FLOTILLA_CHECK(in.good(), NotFound, "ImageNetReader: cannot open list ", list,
                 " (expected data_dir/train_list.txt and val_list.txt)");
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream fields(line);
    Sample s;
    std::string extra;
    const bool ok = (fields >> s.path >> s.label) && !(fields >> extra) && s.label >= 0;
    FLOTILLA_CHECK(ok, InvalidArgument, "ImageNetReader: ", list, ":", lineno,
                   ": expected 'relative/path.jpeg label' (label >= 0), got '", line, "'");
    num_classes_ = std::max<int>(num_classes_, static_cast<int>(s.label) + 1);
    samples_.push_back(std::move(s));
  }
  FLOTILLA_CHECK(!samples_.empty(), InvalidArgument, "ImageNetReader: ", list, " lists no images");
  pool_ = std::make_unique<ThreadPool>(o.num_workers);
}

ImageNetReader::~ImageNetReader() {
  for (size_t i = in_flight_begin_; i < in_flight_.size(); ++i) in_flight_[i].wait();
}

int64_t ImageNetReader::batches_per_epoch() const {
  const int64_t per_rank = options_.even_shards ? size() / options_.nranks
                                                : (size() - options_.rank + options_.nranks - 1) / options_.nranks;
  return options_.drop_last ? per_rank / options_.batch_size
                            : (per_rank + options_.batch_size - 1) / options_.batch_size;
}

void ImageNetReader::StartEpoch(int64_t epoch) {
  for (size_t i = in_flight_begin_; i < in_flight_.size(); ++i) in_flight_[i].wait();
  in_flight_.clear();
  in_flight_begin_ = 0;
  std::vector<int64_t> all(samples_.size());
  std::iota(all.begin(), all.end(), 0);
  if (options_.shuffle) std::shuffle(all.begin(), all.end(), std::mt19937_64(SampleSeed(options_.seed, epoch, -1)));
  const int64_t end = options_.even_shards ? size() / options_.nranks * options_.nranks : size();
  order_.clear();
  for (int64_t i = options_.rank; i < end; i += options_.nranks) order_.push_back(all[i]);
  if (options_.drop_last) order_.resize(order_.size() / options_.batch_size * options_.batch_size);
  epoch_ = epoch;
  next_ = 0;
  for (int i = 0; i < options_.prefetch; ++i) SubmitNext();
}

void ImageNetReader::SubmitNext() {
  if (next_ >= order_.size()) return;
  const size_t end = std::min(order_.size(), next_ + size_t(options_.batch_size));
  std::vector<int64_t> indices(order_.begin() + next_, order_.begin() + end);
  next_ = end;
  auto task = std::make_shared<std::packaged_task<ImageBatch()>>(
      [this, indices = std::move(indices), epoch = epoch_]() mutable { return Load(std::move(indices), epoch); });
  in_flight_.push_back(task->get_future());
  pool_->Submit([task] { (*task)(); });
}

std::optional<ImageBatch> ImageNetReader::Next() {
  while (in_flight_begin_ < in_flight_.size()) {
    ImageBatch batch = in_flight_[in_flight_begin_++].get();
    SubmitNext();
    if (batch.image.dims()[0] > 0) return batch;
  }
  return std::nullopt;
}

ImageBatch ImageNetReader::Load(std::vector<int64_t> indices, int64_t epoch) const {
  const ImageNetOptions& o = options_;
  const int64_t n = static_cast<int64_t>(indices.size()), plane = int64_t(o.image_size) * o.image_size;
  ImageBatch batch{Tensor(DType::kFloat32, {n, 3, o.image_size, o.image_size}), Tensor(DType::kInt64, {n, 1})};
  float* images = batch.image.mutable_data<float>();
  int64_t* labels = batch.label.mutable_data<int64_t>();
  int64_t kept = 0;
  for (int64_t index : indices) {
    const Sample& s = samples_[index];
    const std::string path = o.data_dir + "/" + s.path;
    try {
      Image img = DecodeJpeg(ReadImageFile(path), path);
      if (o.train) {
        std::mt19937_64 rng(SampleSeed(o.seed, epoch, index));
        img = RandomResizedCrop(img, o.image_size, rng, o.lower_scale);
        if (o.flip && (rng() & 1)) img = FlipHorizontal(img);
      } else {
        img = ResizeShortCenterCrop(img, std::max(o.resize_short, o.image_size), o.image_size);
      }
      NormalizeToCHW(img, o.mean.data(), o.std.data(), images + kept * 3 * plane);
      labels[kept++] = s.label;
    } catch (const Corruption& e) {
      if (!o.skip_bad_images) throw;
      log::Warn("ImageNetReader: skipping bad image {}: {}", path, e.what());
      ++batch.skipped;
    }
  }
  if (kept < n) {
    batch.image = batch.image.Slice(0, kept);
    batch.label = batch.label.Slice(0, kept);
  }
  return batch;
}

}  // namespace flotilla::io
