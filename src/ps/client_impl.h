// PsClient's state, shared by the files that implement it (client.cc: the
// dense and sparse data paths; client_admin.cc: barrier, save, load, shrink,
// finish, stop). Private to the ps layer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "flotilla/ps/client.h"
#include "ps/call_plan.h"
#include "ps/rpc_fanout.h"

namespace flotilla::ps {

class PsClient::Impl {
 public:
  Impl(std::vector<std::string> eps, int trainer_id, int num_trainers, PsClientOptions opts)
      : endpoints(std::move(eps)), trainer_id(trainer_id), num_trainers(num_trainers),
        options(std::move(opts)), fanout(endpoints, options) {}

  // One request per server holding a block of any var; values copied in when `with_values`.
  // The requests are this thread's reused messages (see Reused).
  std::vector<rpc::PushDenseRequest>& SplitDense(std::span<const DenseVar> vars, bool with_values) const;
  void SendDense(const char* method, std::vector<rpc::PushDenseRequest>& reqs, rpc::DenseWrite write);
  void SendSparse(const char* method, const std::string& name, std::span<const int64_t> keys,
                  const Tensor& values, rpc::DenseWrite write, bool delta,
                  std::optional<float> lr = std::nullopt);
  using KeyRoute = ps::KeyRoute;
  KeyRoute Route(std::span<const int64_t> keys) const;
  // The pull behind both PullSparse overloads: rows(positions, bytes, dim)
  // receives rows [positions.size(), dim] as unaligned bytes straight from
  // a reply (see PsClient::RowSink for the rest of the contract).
  using RowBytes = std::function<void(std::span<const uint32_t> positions, const char* rows, int64_t dim)>;
  void PullRows(const std::string& name, std::span<const int64_t> keys, const RowBytes& rows);

  std::vector<std::string> endpoints;
  int trainer_id;
  int num_trainers;
  PsClientOptions options;
  RpcFanout fanout;
  std::atomic<bool> finished{false};
  // Push request ids: a random base per client, then a counter (see RequestDedup).
  std::atomic<uint64_t> next_request_id{RandomId()};
  uint64_t NewRequestId() {
    uint64_t id = next_request_id.fetch_add(1);
    return id == 0 ? next_request_id.fetch_add(1) : id;
  }
  static uint64_t RandomId() {
    std::random_device rd;
    return (uint64_t{rd()} << 32) ^ rd();
  }
};

}  // namespace flotilla::ps
