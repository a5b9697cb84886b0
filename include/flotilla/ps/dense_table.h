// DenseTable: the blocks of one dense parameter that one server holds.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flotilla/ps/initializer.h"
#include "flotilla/ps/slicing.h"
#include "flotilla/ps/update_rule.h"

namespace flotilla::ps {

struct DenseTableConfig {
  std::string name;
  int64_t numel = 0;
  int64_t row_width = 1;  // product of dims[1:]; blocks hold whole rows
  std::shared_ptr<const UpdateRule> rule;  // required
  InitializerConfig initializer;           // default: zeros
  int64_t min_block_size = kMinBlockSize;
};

// Holds the blocks of SliceDense(name, numel, num_servers, ...) placed on
// `server_index`, each with its values, optimizer state and a pending
// gradient sum for sync mode. Every method is thread-safe (one mutex per
// block). Methods taking a block id throw NotFound when this server does not
// hold that block and InvalidArgument when a span has the wrong length.
class DenseTable {
 public:
  DenseTable(DenseTableConfig config, int server_index, int num_servers);
  ~DenseTable();
  DenseTable(const DenseTable&) = delete;
  DenseTable& operator=(const DenseTable&) = delete;

  const std::string& name() const { return config_.name; }
  int64_t numel() const { return config_.numel; }
  const UpdateRule& rule() const { return *config_.rule; }
  // The blocks this server holds, in id order.
  std::vector<DenseBlock> blocks() const;
  bool HasBlock(int block_id) const;
  // Throws NotFound when this server does not hold the block.
  DenseBlock block(int block_id) const;

  void Pull(int block_id, std::span<float> out) const;
  // Applies the update rule now (async mode) at learning rate `lr` (unset:
  // the rule's constant rate).
  void Push(int block_id, std::span<const float> grad, std::optional<float> lr = {});
  // Adds grad to the block's pending sum (sync mode); see ApplyPending.
  void Accumulate(int block_id, std::span<const float> grad, std::optional<float> lr = {});
  // Applies (pending sum / divisor) to every block that received gradients
  // since the last call, at the rate the last Accumulate named, then clears
  // the sums.
  void ApplyPending(int divisor);
  bool HasPending() const;
  // value += delta (GEO).
  void PushDelta(int block_id, std::span<const float> delta);
  // Overwrites the values (seeding from trainer 0, loading); state is kept.
  void Set(int block_id, std::span<const float> values);

  // Binary image of the held blocks (values and state), and its inverse.
  // Deserialize throws Corruption naming `what` when the image does not
  // match this table (name, size, rule, blocks).
  std::string Serialize() const;
  void Deserialize(std::string_view image, const std::string& what);
  // This server's blocks cut from the images every server of a differently
  // sized job saved (together they must tile the parameter).
  void DeserializeResliced(std::span<const std::string> images, const std::string& what);

 private:
  struct Block;
  struct SavedBlock;
  std::vector<SavedBlock> ParseImage(std::string_view image, const std::string& what) const;
  Block& Find(int block_id) const;

  DenseTableConfig config_;
  std::vector<std::unique_ptr<Block>> blocks_;  // held blocks, id order; fixed after construction
};

}  // namespace flotilla::ps
