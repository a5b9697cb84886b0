// Threads as ranks over an in-memory store: every backend, op, dtype and
// edge-case count, plus async communicators and failure naming.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "comm/testing/run_ranks.h"
#include "flotilla/comm/hash_store.h"
#include "flotilla/comm/process_group.h"
#include "flotilla/common/error.h"
#include "flotilla/common/logging.h"

namespace flotilla::comm {
namespace {

using namespace std::chrono_literals;
using testing::RunRanks;

// Builds one group per rank thread; host ids by rank when given.
std::vector<std::unique_ptr<ProcessGroup>> MakeGroups(int n, const std::string& backend,
                                                      std::vector<std::string> hosts = {},
                                                      int comm_num = 1) {
  auto store = std::make_shared<HashStore>();
  std::vector<std::unique_ptr<ProcessGroup>> groups(n);
  RunRanks(n, [&](int r) {
    ProcessGroupOptions o;
    o.backend = backend;
    o.timeout = 60s;
    o.comm_num = comm_num;
    if (!hosts.empty()) o.host_id = hosts[r];
    groups[r] = NewProcessGroup(store, r, n, o);
  });
  return groups;
}

std::vector<std::unique_ptr<ProcessGroup>> MakeGroupsWithStall(int n,
                                                               std::chrono::milliseconds stall,
                                                               const std::string& backend) {
  auto store = std::make_shared<HashStore>();
  std::vector<std::unique_ptr<ProcessGroup>> groups(n);
  RunRanks(n, [&](int r) {
    ProcessGroupOptions o;
    o.backend = backend;
    o.timeout = 30s;
    o.stall_warning_after = stall;
    groups[r] = NewProcessGroup(store, r, n, o);
  });
  return groups;
}

template <typename T>
T Value(int rank, size_t i, ReduceOp op) {
  if (op == ReduceOp::kProd) return T((rank + i) % 2 + 1);
  return T(int(rank * 3 + i % 11) - 7);
}

template <typename T>
T Expected(int n, size_t i, ReduceOp op) {
  T acc = Value<T>(0, i, op);
  for (int r = 1; r < n; ++r) {
    T v = Value<T>(r, i, op);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc = acc + v; break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kProd: acc = acc * v; break;
    }
  }
  if (op == ReduceOp::kAvg) acc = acc / T(n);
  return acc;
}

template <typename T>
void CheckAllreduce(ProcessGroup& pg, size_t count, ReduceOp op) {
  std::vector<T> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = Value<T>(pg.rank(), i, op);
  pg.allreduce(data.data(), count, DTypeOf<T>(), op);
  for (size_t i = 0; i < count; ++i) {
    if (data[i] != Expected<T>(pg.size(), i, op)) {
      FAIL() << "rank " << pg.rank() << " of " << pg.size() << " " << ReduceOpName(op) << " "
             << DTypeName(DTypeOf<T>()) << " count " << count << " element " << i << ": got "
             << data[i] << " want " << Expected<T>(pg.size(), i, op);
    }
  }
}

const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin,
                         ReduceOp::kProd};
const DType kTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64};

// world x count x dtype x op. The largest count runs every dtype with sum
// and one other op per dtype, keeping the grid within seconds.
void AllreduceGrid(const std::string& backend, int max_world) {
  for (int n = 1; n <= max_world; ++n) {
    auto groups = MakeGroups(n, backend);
    EXPECT_EQ(groups[0]->backend(), backend);
    RunRanks(n, [&](int r) {
      for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(1) << 20}) {
        for (DType dt : kTypes) {
          for (ReduceOp op : kOps) {
            bool big = count == (size_t(1) << 20);
            if (big && op != ReduceOp::kSum && int(op) != 1 + int(dt)) continue;
            VisitDType(dt, [&]<typename T>() { CheckAllreduce<T>(*groups[r], count, op); });
          }
        }
      }
    });
    EXPECT_GT(groups[0]->stats().allreduce_calls, 0);
  }
}

TEST(ShmProcessGroup, AllreduceGrid) { AllreduceGrid("shm", 8); }
TEST(GlooProcessGroup, AllreduceGrid) { AllreduceGrid("gloo", 5); }

TEST(HierarchicalProcessGroup, AllreduceOverFakeHosts) {
  for (auto hosts : std::vector<std::vector<std::string>>{{"a", "a", "b", "b"},
                                                          {"a", "b", "a", "a", "c"}}) {
    int n = int(hosts.size());
    auto groups = MakeGroups(n, "auto", hosts);
    EXPECT_EQ(groups[0]->backend(), "hierarchical");
    RunRanks(n, [&](int r) {
      for (size_t count : {size_t(0), size_t(7), size_t(100000)}) {
        for (ReduceOp op : kOps) CheckAllreduce<float>(*groups[r], count, op);
        CheckAllreduce<int64_t>(*groups[r], count, ReduceOp::kAvg);
      }
    });
  }
}

// Many rounds back to back, with values changing every round: catches a rank
// overwriting a slot half that a slower peer still reads.
TEST(ShmProcessGroup, BackToBackRoundsStayConsistent) {
  for (int n : {2, 3}) {
    auto groups = MakeGroups(n, "shm");
    RunRanks(n, [&](int r) {
      for (size_t count : {size_t(100), size_t(20000), size_t(3) << 20}) {
        const int rounds = count > 100000 ? 5 : 300;
        std::vector<int64_t> d(count);
        for (int it = 0; it < rounds; ++it) {
          for (size_t i = 0; i < count; ++i) d[i] = int64_t(it * 1000 + r + i % 3);
          groups[r]->allreduce(d.data(), count, DType::kInt64, ReduceOp::kSum);
          for (size_t i = 0; i < count; i += 97) {
            ASSERT_EQ(d[i], int64_t(n * (it * 1000 + i % 3) + n * (n - 1) / 2))
                << "round " << it << " count " << count;
          }
          if (it % 7 == 0) groups[r]->barrier();
        }
      }
    });
  }
}

TEST(ProcessGroup, AutoChoosesByHosts) {
  EXPECT_EQ(MakeGroups(2, "auto", {"h", "h"})[0]->backend(), "shm");
  EXPECT_EQ(MakeGroups(2, "auto", {"h1", "h2"})[0]->backend(), "gloo");
}

// broadcast, allgather, reduce_scatter, reduce, barrier, send/recv.
// `big` spans several shared-memory rounds.
void OtherOps(const std::string& backend, int n, std::vector<std::string> hosts = {},
              size_t big = size_t(3) << 20) {
  auto groups = MakeGroups(n, backend, hosts);
  RunRanks(n, [&](int r) {
    ProcessGroup& pg = *groups[r];
    for (size_t count : {size_t(0), size_t(1), size_t(1000), big}) {
      for (int root = 0; root < n; ++root) {
        std::vector<int64_t> b(count, r == root ? 40 + root : -1);
        pg.broadcast(b.data(), count, DType::kInt64, root);
        for (auto v : b) ASSERT_EQ(v, 40 + root) << backend << " broadcast root " << root;
      }
      std::vector<double> in(count, r + 0.5), out(count * n, -1);
      pg.allgather(in.data(), out.data(), count, DType::kFloat64);
      for (int t = 0; t < n; ++t) {
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[t * count + i], t + 0.5);
      }
      std::vector<int32_t> rs_in(count * n), rs_out(count, -1);
      for (size_t i = 0; i < rs_in.size(); ++i) rs_in[i] = int32_t(i + r);
      pg.reduce_scatter(rs_in.data(), rs_out.data(), count, DType::kInt32, ReduceOp::kSum);
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(rs_out[i], int32_t(n * (r * count + i) + n * (n - 1) / 2));
      }
      std::vector<float> red(count, float(r + 1));
      pg.reduce(red.data(), count, DType::kFloat32, ReduceOp::kMax, n - 1);
      if (r == n - 1) {
        for (auto v : red) ASSERT_EQ(v, float(n));
      }
      pg.barrier();
    }
    if (n == 1) return;
    // A ring of point-to-point messages, one small and one several chunks long.
    for (size_t bytes : {size_t(0), size_t(13), size_t(1) << 20}) {
      std::vector<char> msg(bytes, char('a' + r)), got(bytes, 0);
      int next = (r + 1) % n, prev = (r + n - 1) % n;
      if (r % 2 == 0) {
        pg.send(msg.data(), bytes, next, 7);
        pg.recv(got.data(), bytes, prev, 7);
      } else {
        pg.recv(got.data(), bytes, prev, 7);
        pg.send(msg.data(), bytes, next, 7);
      }
      for (char c : got) ASSERT_EQ(c, char('a' + prev));
    }
  });
}

TEST(ShmProcessGroup, OtherOps) {
  for (int n : {1, 2, 3, 4}) OtherOps("shm", n);
}
TEST(GlooProcessGroup, OtherOps) {
  for (int n : {1, 2, 3}) OtherOps("gloo", n, {}, 100000);
}
TEST(HierarchicalProcessGroup, OtherOps) { OtherOps("hierarchical", 4, {"a", "a", "b", "b"}, 100000); }

TEST(ProcessGroup, TensorsAndAsyncOnSeveralCommunicators) {
  const int n = 3, kComms = 3;
  for (std::string backend : {"shm", "gloo"}) {
    auto groups = MakeGroups(n, backend, {}, kComms);
    RunRanks(n, [&](int r) {
      ProcessGroup& pg = *groups[r];
      ASSERT_EQ(pg.comm_num(), kComms);
      std::vector<Tensor> ts;
      std::vector<std::shared_ptr<Work>> works;
      for (int k = 0; k < 6; ++k) {
        ts.push_back(Tensor::FromVector<float>(std::vector<float>(5000 + k, float(r + k)),
                                               {5000 + k}));
        works.push_back(pg.allreduceAsync(ts.back(), ReduceOp::kSum, k % kComms));
      }
      for (auto& w : works) w->wait();
      for (int k = 0; k < 6; ++k) {
        for (float v : ts[k].ToVector<float>()) ASSERT_EQ(v, float(3 + 3 * k));
      }
      Tensor t = Tensor::FromVector<int32_t>({r, r}, {2});
      pg.broadcast(t, 1, 2);
      EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{1, 1}));
      Tensor all;
      pg.allgather(t, all);
      EXPECT_EQ(all.numel(), 2 * n);
      Tensor in = Tensor::FromVector<int64_t>(std::vector<int64_t>(3 * n, r), {3 * n}), out;
      pg.reduce_scatter(in, out, ReduceOp::kMax);
      EXPECT_EQ(out.ToVector<int64_t>(), (std::vector<int64_t>(3, n - 1)));
      Tensor empty(DType::kFloat32, {0});
      pg.allreduce(empty);
      pg.barrierAsync(1)->wait();
      EXPECT_EQ(pg.stats().allreduce_calls, 7);
    });
  }
}

TEST(ProcessGroupFailure, MissingRankIsNamedAtJoin) {
  auto store = std::make_shared<HashStore>();
  ProcessGroupOptions o;
  o.timeout = 400ms;
  o.stall_warning_after = 100ms;
  try {
    RunRanks(2, [&](int r) { NewProcessGroup(store, r, 3, o); });
    FAIL() << "group formed without rank 2";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("ranks [2]"), std::string::npos) << e.what();
  }
}

// Groups of `n` ranks whose ops time out after `timeout`. Forming a group
// runs under the same timeout; on a loaded machine a formation that times
// out is retried on a fresh store (what is under test is the op).
std::vector<std::unique_ptr<ProcessGroup>> MakeGroupsWithTimeout(int n, const std::string& backend,
                                                                 std::chrono::milliseconds timeout) {
  for (int attempt = 1;; ++attempt) {
    auto store = std::make_shared<HashStore>();
    std::vector<std::unique_ptr<ProcessGroup>> groups(n);
    try {
      RunRanks(n, [&](int r) {
        ProcessGroupOptions o;
        o.backend = backend;
        o.timeout = timeout;
        groups[r] = NewProcessGroup(store, r, n, o);
      });
      return groups;
    } catch (const DeadlineExceeded&) {
      if (attempt == 5) throw;
    }
  }
}

TEST(ProcessGroupFailure, RankSkippingAnOpIsNamed) {
  for (std::string backend : {"shm", "gloo"}) {
    auto groups = MakeGroupsWithTimeout(3, backend, 500ms);
    std::vector<std::string> msgs(2);
    // Ranks 0 and 1 wait on rank 2 (the ring / the flags), rank 2 does nothing.
    RunRanks(2, [&](int r) {
      std::vector<float> data(100, 1.0f);
      try {
        groups[r]->allreduce(data.data(), data.size(), DType::kFloat32, ReduceOp::kSum);
        ADD_FAILURE() << backend << " allreduce completed without rank 2";
      } catch (const DeadlineExceeded& e) {
        msgs[r] = e.what();
      } catch (const Unavailable& e) {
        msgs[r] = e.what();
      }
    });
    for (int r = 0; r < 2; ++r) EXPECT_FALSE(msgs[r].empty()) << backend << " rank " << r;
    if (backend == "shm") {
      // The later of ranks 0 and 1 finds the earlier one arrived and names
      // rank 2 alone; the earlier one names rank 2, and also the other when
      // a loaded machine kept it away for the whole timeout.
      EXPECT_TRUE(msgs[0].find("ranks [2]") != std::string::npos ||
                  msgs[1].find("ranks [2]") != std::string::npos)
          << msgs[0] << "\n" << msgs[1];
      EXPECT_TRUE(msgs[0].find("ranks [2]") != std::string::npos ||
                  msgs[0].find("ranks [1, 2]") != std::string::npos)
          << msgs[0];
      EXPECT_TRUE(msgs[1].find("ranks [2]") != std::string::npos ||
                  msgs[1].find("ranks [0, 2]") != std::string::npos)
          << msgs[1];
    }
  }
}

TEST(ProcessGroup, RecreatedOnTheSameStoreMeetsAgain) {
  auto store = std::make_shared<HashStore>();
  for (int round = 0; round < 3; ++round) {
    RunRanks(2, [&](int r) {
      ProcessGroupOptions o;
      o.backend = "shm";
      o.timeout = 10s;
      auto pg = NewProcessGroup(store, r, 2, o);
      int64_t v = r + round;
      pg->allreduce(&v, 1, DType::kInt64, ReduceOp::kSum);
      EXPECT_EQ(v, 1 + 2 * round);
    });
  }
}

// A late rank draws a warning naming it, then the op completes.
void StallWarningNamesLateRank(const std::string& backend, const std::string& expected) {
  log::Capture captured;
  auto groups_late = MakeGroupsWithStall(3, 100ms, backend);
  RunRanks(3, [&](int r) {
    if (r == 2) std::this_thread::sleep_for(600ms);
    float v = 1;
    groups_late[r]->allreduce(&v, 1, DType::kFloat32, ReduceOp::kSum);
    EXPECT_EQ(v, 3.0f);
  });
  const std::string logged = captured.text();
  EXPECT_NE(logged.find(expected), std::string::npos) << backend << ": " << logged;
}

TEST(ShmProcessGroup, StallWarningNamesLateRank) {
  StallWarningNamesLateRank("shm", "still waiting for ranks [2]");
}
TEST(GlooProcessGroup, StallWarningNamesLateRank) {
  StallWarningNamesLateRank("gloo", "ranks not yet in it: [2]");
}

TEST(ProcessGroup, RejectsBadArguments) {
  auto store = std::make_shared<HashStore>();
  EXPECT_THROW(NewProcessGroup(store, 2, 2), InvalidArgument);
  ProcessGroupOptions o;
  o.backend = "nccl";
  EXPECT_THROW(NewProcessGroup(store, 0, 1, o), InvalidArgument);
  auto pg = NewProcessGroup(store, 0, 1);
  EXPECT_THROW(pg->barrier(5), InvalidArgument);
  EXPECT_THROW(pg->send(nullptr, 0, 0), InvalidArgument);
}

}  // namespace
}  // namespace flotilla::comm
