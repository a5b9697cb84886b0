#include "fleet/heter_pipeline.h"

#include <map>

#include "flotilla/common/enforce.h"

namespace flotilla::fleet {

HeterPipeline::HeterPipeline(const HeterSplit& split, std::unique_ptr<ps::HeterClient> client, int depth)
    : split_(split), client_(std::move(client)), depth_(depth) {
  FLOTILLA_CHECK(depth_ >= 1, InvalidArgument, "heter pipeline depth ", depth_, " must be at least 1");
}

HeterPipeline::~HeterPipeline() {
  for (auto& b : flying_) {
    if (b.reply.valid()) b.reply.wait();
  }
}

std::vector<Tensor> HeterPipeline::Step(Executor& exe, const FeedMap& feed,
                                        const std::vector<std::string>& fetch) {
  std::vector<std::string> names = split_.boundary;
  names.insert(names.end(), split_.kept.begin(), split_.kept.end());
  std::vector<Tensor> values = exe.Run(split_.trainer_forward, feed, names);
  ps::NamedTensors request;
  InFlight b{.feed = feed, .fetch = fetch};
  for (size_t i = 0; i < names.size(); ++i) {
    if (i < split_.boundary.size()) {
      request.emplace_back(names[i], values[i]);
    } else {
      b.feed[names[i]] = values[i];
    }
  }
  for (const auto& n : split_.heter_feeds) {
    auto it = feed.find(n);
    FLOTILLA_CHECK(it != feed.end(), InvalidArgument, "heter training: data variable '", n,
                   "' is read by the dense part but was not fed");
    request.emplace_back(n, it->second);
  }
  b.reply = client_->Run(next_batch_++, request, fetch);
  flying_.push_back(std::move(b));
  if (static_cast<int>(flying_.size()) < depth_) return {};
  return FinishOldest(exe);
}

std::vector<Tensor> HeterPipeline::FinishOldest(Executor& exe) {
  InFlight b = std::move(flying_.front());
  flying_.pop_front();
  std::map<std::string, Tensor> reply;
  for (auto& [name, t] : b.reply.get()) reply[name] = std::move(t);
  for (const auto& g : split_.boundary_grads) {
    auto it = reply.find(g);
    FLOTILLA_CHECK(it != reply.end(), Internal, "heter worker at ", client_->endpoint(),
                   " did not return the gradient '", g, "'");
    b.feed[g] = it->second;
  }
  exe.Run(split_.trainer_backward, b.feed);
  std::vector<Tensor> out;
  for (const auto& n : b.fetch) {
    auto it = reply.find(n);
    FLOTILLA_CHECK(it != reply.end(), Internal, "heter worker at ", client_->endpoint(),
                   " did not return the fetch '", n, "'");
    out.push_back(it->second);
  }
  return out;
}

std::vector<Tensor> HeterPipeline::Drain(Executor& exe) {
  std::vector<Tensor> last;
  while (!flying_.empty()) last = FinishOldest(exe);
  return last;
}

void HeterPipeline::Finish(Executor& exe) {
  Drain(exe);
  client_->Done();
}

}  // namespace flotilla::fleet
