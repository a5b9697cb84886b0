// The service over loopback: 2 servers x 2 trainer clients in threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "flotilla/ps/client.h"
#include "flotilla/ps/server.h"
#include "flotilla/trace/metrics.h"
#include "flotilla/trace/standard_metrics.h"
#include <grpcpp/grpcpp.h>

#include "ps/ps.grpc.pb.h"
#include "ps/request_dedup.h"
#include "ps/table_file.h"

namespace flotilla::ps {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kBig = 20000;  // two blocks over two servers
constexpr int64_t kDim = 4;

UpdateRuleConfig DenseRule() { return UpdateRuleConfig::Adam(0.05f); }
UpdateRuleConfig SparseRule() { return UpdateRuleConfig::Sgd(0.1f); }

DenseTableConfig DenseCfg(const std::string& name, int64_t numel) {
  DenseTableConfig c;
  c.name = name;
  c.numel = numel;
  c.rule = MakeUpdateRule(DenseRule());
  c.initializer = InitializerConfig::Uniform(-1, 1, 3);
  return c;
}

SparseTableConfig SparseCfg() {
  SparseTableConfig c;
  c.name = "emb";
  c.dim = kDim;
  c.rule = MakeUpdateRule(SparseRule());
  c.initializer = InitializerConfig::Normal(0, 0.1f, 11);
  return c;
}

// Servers on loopback ports picked by the OS, each with tables "w" (kBig),
// "b" (3) and sparse "emb".
struct Cluster {
  Cluster(int num_servers, int num_trainers, PsMode mode, std::string token = "",
          std::chrono::milliseconds barrier_timeout = 60s) {
    for (int s = 0; s < num_servers; ++s) {
      PsServerOptions o;
      o.endpoint = "127.0.0.1:0";
      o.server_index = s;
      o.num_servers = num_servers;
      o.num_trainers = num_trainers;
      o.mode = mode;
      o.token = token;
      o.barrier_timeout = barrier_timeout;
      o.model_root = ::testing::TempDir();
      auto server = std::make_unique<PsServer>(o);
      server->AddDenseTable(DenseCfg("w", kBig));
      server->AddDenseTable(DenseCfg("b", 3));
      server->AddSparseTable(SparseCfg());
      server->Start();
      endpoints.push_back(server->endpoint());
      servers.push_back(std::move(server));
    }
  }
  std::unique_ptr<PsClient> Client(int trainer, int num_trainers, PsClientOptions o = {}) {
    return std::make_unique<PsClient>(endpoints, trainer, num_trainers, o);
  }
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> endpoints;
};

// Two async servers on loopback holding only the sparse tables `tables`.
struct SparseServers {
  explicit SparseServers(const std::vector<SparseTableConfig>& tables) {
    for (int s = 0; s < 2; ++s) {
      PsServerOptions o;
      o.endpoint = "127.0.0.1:0";
      o.server_index = s;
      o.num_servers = 2;
      o.mode = PsMode::kAsync;
      servers.push_back(std::make_unique<PsServer>(o));
      for (const auto& t : tables) servers.back()->AddSparseTable(t);
      servers.back()->Start();
      endpoints.push_back(servers.back()->endpoint());
    }
  }
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> endpoints;
};

// A deterministic gradient for (trainer, step, index).
float Grad(int trainer, int step, int64_t i) {
  return 0.01f * static_cast<float>((i * 7 + trainer * 13 + step * 5) % 17) - 0.08f;
}

Tensor DenseGrad(int trainer, int step, int64_t numel) {
  Tensor t(DType::kFloat32, {numel});
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < numel; ++i) p[i] = Grad(trainer, step, i);
  return t;
}

std::vector<int64_t> SparseKeys(int trainer, int step) {
  return {trainer * 100 + step, 7, 1000 + step, 3};  // some shared, some private keys
}

Tensor SparseGrad(int trainer, int step) {
  Tensor t(DType::kFloat32, {4, kDim});
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < 4 * kDim; ++i) p[i] = Grad(trainer, step, i + 3);
  return t;
}

TEST(PsService, SyncTwoTrainersEqualOneProcessOnTheAverageGradient) {
  Cluster cluster(2, 2, PsMode::kSync);
  const int kSteps = 5;
  std::vector<std::vector<float>> final_w(2);
  std::vector<Tensor> final_rows(2);
  auto trainer = [&](int id) {
    auto client = cluster.Client(id, 2);
    Tensor w(DType::kFloat32, {kBig});
    for (int step = 0; step < kSteps; ++step) {
      client->PushDense("w", DenseGrad(id, step, kBig));
      client->PushSparse("emb", SparseKeys(id, step), SparseGrad(id, step));
      client->Barrier();  // the last arrival applies the mean gradient
      client->PullDense("w", &w);
    }
    final_w[id] = w.ToVector<float>();
    std::vector<int64_t> keys{0, 100, 7, 3, 1004};
    final_rows[id] = client->PullSparse("emb", keys);
    client->Finish();
  };
  std::thread t0(trainer, 0), t1(trainer, 1);
  t0.join();
  t1.join();

  // One process: the same tables on one server, applying the mean gradient.
  DenseTable ref_w(DenseCfg("w", kBig), 0, 1);
  SparseTable ref_emb(SparseCfg());
  for (int step = 0; step < kSteps; ++step) {
    Tensor g0 = DenseGrad(0, step, kBig), g1 = DenseGrad(1, step, kBig);
    std::vector<float> sum(kBig);
    for (int64_t i = 0; i < kBig; ++i) sum[i] = g0.data<float>()[i] + g1.data<float>()[i];
    ref_w.Accumulate(0, sum);
    for (int id = 0; id < 2; ++id) {
      ref_emb.Accumulate(SparseKeys(id, step), SparseGrad(id, step).span<float>());
    }
    ref_w.ApplyPending(2);
    ref_emb.ApplyPending(2);
  }
  std::vector<float> want(kBig);
  ref_w.Pull(0, want);
  EXPECT_EQ(final_w[0], want);
  EXPECT_EQ(final_w[1], want);
  std::vector<int64_t> keys{0, 100, 7, 3, 1004};
  std::vector<float> want_rows(keys.size() * kDim);
  ref_emb.Pull(keys, want_rows);
  EXPECT_EQ(final_rows[0].ToVector<float>(), want_rows);
  EXPECT_EQ(final_rows[1].ToVector<float>(), want_rows);
}

TEST(PsService, AsyncAppliesEachPushOnArrival) {
  Cluster cluster(2, 2, PsMode::kAsync);
  auto c0 = cluster.Client(0, 2), c1 = cluster.Client(1, 2);
  Tensor w0(DType::kFloat32, {kBig}), w1(DType::kFloat32, {kBig});
  c0->PullDense("w", &w0);
  c0->PushDense("w", DenseGrad(0, 0, kBig));
  c1->PullDense("w", &w1);  // no barrier needed: applied on arrival
  EXPECT_NE(w0.ToVector<float>(), w1.ToVector<float>());

  // SGD sparse: two pushes of g move a row by 2 * lr * g.
  std::vector<int64_t> key{42};
  Tensor before = c0->PullSparse("emb", key);
  Tensor g = SparseGrad(0, 0).Slice(0, 1).Clone();
  c0->PushSparse("emb", key, g);
  c1->PushSparseAsync("emb", key, g).get();
  Tensor after = c1->PullSparseAsync("emb", key).get();
  for (int j = 0; j < kDim; ++j) {
    EXPECT_FLOAT_EQ(after.data<float>()[j], before.data<float>()[j] - 0.2f * g.data<float>()[j]);
  }
  // The future carries the server's error.
  EXPECT_THROW(c0->PushDenseAsync({{"nope", Tensor(DType::kFloat32, {3})}}).get(), NotFound);
}

TEST(PsService, GeoDeltasAreSummedAndInitOverwrites) {
  Cluster cluster(2, 2, PsMode::kGeo);
  auto c0 = cluster.Client(0, 2), c1 = cluster.Client(1, 2);
  Tensor start = Tensor::FromVector<float>({1, 2, 3}, {3});
  c0->InitDense(std::vector<DenseVar>{{"b", start}});
  Tensor d0 = Tensor::FromVector<float>({0.5f, 0, 0}, {3});
  Tensor d1 = Tensor::FromVector<float>({0.25f, 1, 0}, {3});
  c0->PushDenseDelta(std::vector<DenseVar>{{"b", d0}});
  c1->PushDenseDelta(std::vector<DenseVar>{{"b", d1}});
  Tensor b(DType::kFloat32, {3});
  c1->PullDense("b", &b);
  EXPECT_EQ(b.ToVector<float>(), (std::vector<float>{1.75f, 3, 3}));

  std::vector<int64_t> keys{5, 6};
  Tensor rows = Tensor::FromVector<float>(std::vector<float>(8, 1.0f), {2, kDim});
  c0->InitSparse("emb", keys, rows);
  c1->PushSparseDelta("emb", keys, rows);
  c0->PushSparseDelta("emb", keys, rows);
  EXPECT_EQ(c0->PullSparse("emb", keys).ToVector<float>(), std::vector<float>(8, 3.0f));
}

TEST(PsService, SparseRowsMatchTheTableInitializerAcrossServers) {
  Cluster cluster(2, 1, PsMode::kAsync);
  auto client = cluster.Client(0, 1);
  std::vector<int64_t> keys{1, 2, 3, 4, 1, 99999};
  Tensor rows = client->PullSparse("emb", keys);
  ASSERT_EQ(rows.dims(), (Dims{6, kDim}));
  SparseTable ref(SparseCfg());
  std::vector<float> want(keys.size() * kDim);
  ref.Pull(keys, want);
  EXPECT_EQ(rows.ToVector<float>(), want);
  EXPECT_EQ(cluster.servers[0]->sparse("emb").size(), 2);  // keys 2, 4 (key mod 2 == 0)
  EXPECT_EQ(cluster.servers[1]->sparse("emb").size(), 3);  // keys 1, 3, 99999
  EXPECT_EQ(client->PullSparse("emb", std::vector<int64_t>{}).numel(), 0);
}

TEST(PsService, BarrierWaitsForEveryTrainerAndTimesOutNamingTheMissing) {
  Cluster cluster(2, 2, PsMode::kSync);
  auto c0 = cluster.Client(0, 2), c1 = cluster.Client(1, 2);
  auto waiting = std::async(std::launch::async, [&] { c0->Barrier(); });
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout);
  c1->Barrier();
  waiting.get();

  Cluster impatient(2, 2, PsMode::kSync, "", 300ms);
  try {
    impatient.Client(0, 2)->Barrier();  // trainer 1 never comes
    FAIL() << "barrier did not time out";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("trainers [1]"), std::string::npos) << e.what();
  }
}

TEST(PsService, FinishedTrainersEndRunAndDoNotBlockBarriers) {
  Cluster cluster(2, 2, PsMode::kSync);
  std::vector<std::future<void>> runs;
  for (auto& s : cluster.servers) runs.push_back(std::async(std::launch::async, [&] { s->Run(); }));
  auto c0 = cluster.Client(0, 2), c1 = cluster.Client(1, 2);
  c1->PushDense("b", Tensor::FromVector<float>({1, 1, 1}, {3}));
  c1->Finish();
  c1->Finish();  // idempotent
  c0->Barrier();  // only trainer 0 is live now; applies trainer 1's push
  EXPECT_EQ(runs[0].wait_for(50ms), std::future_status::timeout);
  c0->Finish();
  for (auto& r : runs) r.get();  // Run() returns once both trainers finished
  EXPECT_EQ(cluster.servers[0]->finished_trainers(), (std::vector<int>{0, 1}));
}

TEST(PsService, StoppedServerFailsClientsWithinTheDeadlineNamingIt) {
  Cluster cluster(2, 1, PsMode::kAsync);
  const std::string dead = cluster.endpoints[1];
  cluster.servers[1].reset();  // shut down
  PsClientOptions o;
  o.retry_timeout = 3s;
  o.rpc_timeout = 10s;
  auto client = cluster.Client(0, 1, o);
  const auto start = std::chrono::steady_clock::now();
  Tensor w(DType::kFloat32, {kBig});
  try {
    client->PullDense("w", &w);
    FAIL() << "pull from a stopped server succeeded";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find(dead), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 40s);
}

// Trainer 0 waits in server 0's barrier for trainer 1 (which never comes)
// while server 1 is gone: the barrier fan-out fails on server 1 within the
// retry budget and cancels the wait at server 0 instead of hanging there
// until the barrier timeout.
TEST(PsService, ADeadServerEndsAWaitAtALiveServersBarrier) {
  Cluster cluster(2, 2, PsMode::kSync, "", /*barrier_timeout=*/120s);
  const std::string dead = cluster.endpoints[1];
  cluster.servers[1].reset();
  PsClientOptions o;
  o.retry_timeout = 2s;
  o.barrier_timeout = 120s;
  auto client = cluster.Client(0, 2, o);
  auto barrier = std::async(std::launch::async, [&] { client->Barrier(); });
  const bool ended = barrier.wait_for(30s) == std::future_status::ready;
  if (!ended) cluster.servers[0]->Stop();  // release the wait so the test can end
  ASSERT_TRUE(ended) << "the barrier at the live server outlived the dead one";
  try {
    barrier.get();
    FAIL() << "a barrier with a dead server succeeded";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find(dead), std::string::npos) << e.what();
  }
}

// A pull split into concurrent calls per server returns the rows of one
// unsplit pull, in the caller's key order.
TEST(PsService, SplitPullsReturnTheRowsOfOnePull) {
  Cluster cluster(2, 1, PsMode::kAsync);
  PsClientOptions split;
  split.pull_split_keys = 3;
  split.pull_calls = 8;
  PsClientOptions whole;
  whole.pull_split_keys = 1 << 30;
  auto a = cluster.Client(0, 1, split), b = cluster.Client(0, 1, whole);
  std::vector<int64_t> keys;
  for (int64_t i = 0; i < 41; ++i) keys.push_back((i * 37) % 101 - 50);  // both servers, negative ids too
  Tensor x = a->PullSparse("emb", keys), y = b->PullSparse("emb", keys);
  ASSERT_EQ(x.dims(), (Dims{41, kDim}));
  EXPECT_EQ(x.ToVector<float>(), y.ToVector<float>());
  Tensor one = b->PullSparse("emb", std::vector<int64_t>{keys[17]});
  for (int64_t j = 0; j < kDim; ++j) EXPECT_EQ(x.data<float>()[17 * kDim + j], one.data<float>()[j]);
}

// PullSparseTables: one call per server carries the keys of every table;
// each table's sink gets exactly the rows one pull per table returns (the
// same table twice included), and a table no server has is named.
TEST(PsService, PullSparseTablesDeliversWhatOnePullPerTableReturns) {
  SparseTableConfig wide = SparseCfg();
  wide.name = "wide";
  wide.dim = 1;
  wide.initializer = InitializerConfig::Uniform(-1, 1, 5);
  SparseServers cluster({SparseCfg(), wide});
  PsClient client(cluster.endpoints, 0, 1);
  const std::vector<int64_t> a{-9, 4, 17, 8, 23, 6}, b{5, 6, 7, -2}, c{4, 100, 31};
  const std::vector<std::vector<float>> want{client.PullSparse("emb", a).ToVector<float>(),
                                             client.PullSparse("wide", b).ToVector<float>(),
                                             client.PullSparse("emb", c).ToVector<float>()};
  std::vector<std::vector<float>> got(3);
  std::vector<std::vector<int>> seen{std::vector<int>(a.size()), std::vector<int>(b.size()),
                                     std::vector<int>(c.size())};
  auto into = [&](size_t t, int64_t width) {
    got[t].assign(want[t].size(), 0.0f);
    return [&, t, width](std::span<const uint32_t> positions, const float* rows, int64_t dim) {
      ASSERT_EQ(dim, width);
      for (size_t j = 0; j < positions.size(); ++j) {
        ++seen[t][positions[j]];
        std::copy(rows + j * dim, rows + (j + 1) * dim, got[t].begin() + positions[j] * dim);
      }
    };
  };
  client.PullSparseTables(std::vector<PsClient::TablePull>{
      {"emb", a, into(0, kDim)}, {"wide", b, into(1, 1)}, {"emb", c, into(2, kDim)}});
  EXPECT_EQ(got, want);
  for (const auto& s : seen) EXPECT_EQ(s, std::vector<int>(s.size(), 1));
  try {
    client.PullSparseTables(std::vector<PsClient::TablePull>{{"emb", a, into(0, kDim)}, {"nope", b, into(1, 1)}});
    ADD_FAILURE() << "a pull of an unknown table succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
  }
}

// Shrink reaches every server: rows unseen for a pass go on both.
TEST(PsService, ShrinkEndsAPassOnEveryServer) {
  SparseTableConfig c = SparseCfg();
  c.accessor.delete_after_unseen_passes = 1;
  SparseServers cluster({c});
  PsClient client(cluster.endpoints, 0, 1);
  client.PullSparse("emb", std::vector<int64_t>{1, 2, 3, 4});
  EXPECT_EQ(client.Shrink(), 0);  // seen in the pass that ended
  client.PullSparse("emb", std::vector<int64_t>{1});
  EXPECT_EQ(client.Shrink(), 3);  // 2, 3, 4 unseen for a pass
  EXPECT_EQ(cluster.servers[0]->sparse("emb").size() + cluster.servers[1]->sparse("emb").size(), 1);
}

// The sink receives every key exactly once, call by call, with its row;
// an exception it throws ends the pull and reaches the caller.
TEST(PsService, PullSinkDeliversEveryKeyOnceAndItsErrorsPropagate) {
  Cluster cluster(2, 1, PsMode::kAsync);
  PsClientOptions split;
  split.pull_split_keys = 4;
  split.pull_calls = 6;
  auto client = cluster.Client(0, 1, split);
  std::vector<int64_t> keys;
  for (int64_t i = 0; i < 29; ++i) keys.push_back(i * 11 - 90);
  Tensor whole = client->PullSparse("emb", keys);
  std::vector<int> seen(keys.size(), 0);
  int calls = 0;
  client->PullSparse("emb", keys, [&](std::span<const uint32_t> positions, const float* rows, int64_t dim) {
    ++calls;
    ASSERT_EQ(dim, kDim);
    for (size_t j = 0; j < positions.size(); ++j) {
      ++seen[positions[j]];
      for (int64_t c = 0; c < dim; ++c) {
        EXPECT_EQ(rows[j * dim + c], whole.data<float>()[positions[j] * dim + c]);
      }
    }
  });
  EXPECT_GT(calls, 2);  // split over both servers
  EXPECT_EQ(seen, std::vector<int>(keys.size(), 1));
  EXPECT_THROW(client->PullSparse("emb", keys,
                                  [](std::span<const uint32_t>, const float*, int64_t) {
                                    throw InvalidArgument("sink refused the rows");
                                  }),
               InvalidArgument);
  EXPECT_EQ(client->PullSparse("emb", keys).ToVector<float>(), whole.ToVector<float>());  // still usable
}

// Replies of hundreds of kilobytes arrive in many slices, with rows split
// between them and at any address: the sink still gets every row once, as
// aligned floats, equal to the Tensor pull's.
TEST(PsService, RowSinkGetsAlignedRowsOfLargeReplies) {
  Cluster cluster(2, 1, PsMode::kAsync);
  auto client = cluster.Client(0, 1);
  std::vector<int64_t> keys;
  for (int64_t i = 0; i < 40000; ++i) keys.push_back(i * 7919 % 1000003);
  const Tensor whole = client->PullSparse("emb", keys);
  const float* want = whole.data<float>();
  std::vector<int> seen(keys.size(), 0);
  size_t runs = 0, mismatches = 0;
  client->PullSparse("emb", keys, [&](std::span<const uint32_t> positions, const float* rows, int64_t dim) {
    ++runs;
    ASSERT_EQ(reinterpret_cast<uintptr_t>(rows) % alignof(float), 0u);
    ASSERT_EQ(dim, kDim);
    for (size_t j = 0; j < positions.size(); ++j) {
      ++seen[positions[j]];
      mismatches += !std::equal(rows + j * dim, rows + (j + 1) * dim, want + positions[j] * dim);
    }
  });
  EXPECT_GT(runs, 2u);  // more runs than replies: handed over slice by slice
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(seen, std::vector<int>(keys.size(), 1));
}

TEST(PsService, StopEndsRunAndFailsWaitingBarriers) {
  Cluster cluster(1, 2, PsMode::kSync);
  auto run = std::async(std::launch::async, [&] { cluster.servers[0]->Run(); });
  PsClientOptions o;
  o.retry_timeout = 1s;
  auto c0 = cluster.Client(0, 2, o), c1 = cluster.Client(1, 2, o);
  auto waiting = std::async(std::launch::async, [&] { c0->Barrier(); });
  EXPECT_EQ(waiting.wait_for(50ms), std::future_status::timeout);
  c1->StopServers();
  run.get();
  EXPECT_THROW(waiting.get(), Unavailable);
}

TEST(PsService, WrongTokenIsRefusedAndSaysSo) {
  Cluster cluster(1, 1, PsMode::kAsync, "s3cret");
  PsClientOptions bad;
  bad.token = "guess";
  Tensor b(DType::kFloat32, {3});
  try {
    cluster.Client(0, 1, bad)->PullDense("b", &b);
    FAIL() << "wrong token accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("wrong parameter-server token"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(cluster.Client(0, 1)->PullDense("b", &b), InvalidArgument);  // no token
  // The sparse calls (served on the callback API) check the token too.
  const std::vector<int64_t> keys{1, 2};
  Tensor rows;
  EXPECT_THROW(cluster.Client(0, 1, bad)->PullSparse("emb", keys, &rows), InvalidArgument);
  EXPECT_THROW(cluster.Client(0, 1, bad)->PushSparse("emb", keys, Tensor(DType::kFloat32, {2, kDim})),
               InvalidArgument);
  PsClientOptions good;
  good.token = "s3cret";
  cluster.Client(0, 1, good)->PullDense("b", &b);
  cluster.Client(0, 1, good)->PullSparse("emb", keys, &rows);
  EXPECT_EQ(rows.dim(1), kDim);
}

// A refusal names the caller's address (in the server's log and in the
// error) and is counted in the server's /metrics.
TEST(PsService, RefusalsNameThePeerAndAreCounted) {
  Cluster cluster(1, 1, PsMode::kAsync, "s3cret");
  const double before = trace::AuthRefusals("ps");
  log::Capture capture;
  PsClientOptions bad;
  bad.token = "guess";
  bad.max_attempts = 1;
  Tensor b(DType::kFloat32, {3});
  try {
    cluster.Client(0, 1, bad)->PullDense("b", &b);
    FAIL() << "wrong token accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("request from ipv4:127.0.0.1:"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(trace::AuthRefusals("ps"), before + 1);
  EXPECT_EQ(cluster.servers[0]->refused_requests(), 1);
  const std::string logged = capture.text();
  EXPECT_NE(logged.find("refused ipv4:127.0.0.1:"), std::string::npos) << logged;
  EXPECT_NE(trace::MetricsRegistry::Global().PrometheusText().find(
                "flotilla_auth_refusals_total{service=\"ps\",reason=\"bad_secret\"}"),
            std::string::npos);
}

TEST(PsService, ErrorsFromTheServerKeepTheirKind) {
  Cluster cluster(2, 1, PsMode::kAsync);
  auto client = cluster.Client(0, 1);
  Tensor t(DType::kFloat32, {5});
  EXPECT_THROW(client->PullDense("nope", &t), NotFound);
  EXPECT_THROW(client->PullDense("b", &t), InvalidArgument);  // wrong size: block mismatch
  Tensor bad(DType::kFloat32, {1, 3});
  EXPECT_THROW(client->PushSparse("emb", std::vector<int64_t>{1}, bad), InvalidArgument);
}

TEST(PsService, SaveLoadThroughTheClientAndCorruptionNamesTheFile) {
  Cluster cluster(2, 1, PsMode::kAsync);
  auto client = cluster.Client(0, 1);
  const std::string dir = ::testing::TempDir() + "flotilla_ps_save_" + std::to_string(::getpid());
  RemoveAll(dir);
  std::vector<int64_t> keys{1, 2, 3};
  client->PushDense("w", DenseGrad(0, 0, kBig));
  client->PushSparse("emb", keys, SparseGrad(0, 0).Slice(0, 3).Clone());
  Tensor w_saved(DType::kFloat32, {kBig});
  client->PullDense("w", &w_saved);
  Tensor rows_saved = client->PullSparse("emb", keys);
  client->Save(dir);

  client->PushDense("w", DenseGrad(0, 1, kBig));
  client->PushSparse("emb", keys, SparseGrad(0, 1).Slice(0, 3).Clone());
  client->Load(dir);
  Tensor w(DType::kFloat32, {kBig});
  client->PullDense("w", &w);
  EXPECT_EQ(w.ToVector<float>(), w_saved.ToVector<float>());
  EXPECT_EQ(client->PullSparse("emb", keys).ToVector<float>(), rows_saved.ToVector<float>());

  const std::string victim = TableFileName(dir, "emb", 1, 2);
  std::string data = ReadFile(victim);
  data[data.size() / 2] ^= 0x40;
  WriteFileAtomic(victim, data);
  try {
    client->Load(dir);
    FAIL() << "corrupt table file loaded";
  } catch (const Corruption& e) {
    EXPECT_NE(std::string(e.what()).find(victim), std::string::npos) << e.what();
  }
  RemoveAll(dir);
}

// Saving and loading grow with the tables, not with the request: they wait
// table_io_timeout, not the (here 5 ms) deadline of every other call.
TEST(PsService, SaveAndLoadOutlastTheRpcTimeout) {
  Cluster cluster(1, 1, PsMode::kAsync);
  auto client = cluster.Client(0, 1);
  std::vector<int64_t> keys(400000);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<int64_t>(i);
  Tensor rows = client->PullSparse("emb", keys);  // 400k rows to save
  PsClientOptions impatient;
  impatient.rpc_timeout = std::chrono::milliseconds(5);
  auto hurried = cluster.Client(0, 1, impatient);
  const std::string dir = ::testing::TempDir() + "flotilla_ps_slow_save_" + std::to_string(::getpid());
  RemoveAll(dir);
  hurried->Save(dir);
  client->PushSparse("emb", keys, Tensor::FromVector(std::vector<float>(keys.size() * kDim, 1.0f),
                                                     {static_cast<int64_t>(keys.size()), kDim}));
  hurried->Load(dir);
  EXPECT_EQ(client->PullSparse("emb", keys).ToVector<float>(), rows.ToVector<float>());
  RemoveAll(dir);
}

TEST(RequestDedup, RemembersTheLastCapacityIds) {
  RequestDedup dedup(2);
  EXPECT_TRUE(dedup.FirstTime(5));
  EXPECT_FALSE(dedup.FirstTime(5));
  EXPECT_TRUE(dedup.FirstTime(6));
  EXPECT_TRUE(dedup.FirstTime(7));  // evicts 5
  EXPECT_TRUE(dedup.FirstTime(5));
  EXPECT_TRUE(dedup.FirstTime(0));
  EXPECT_TRUE(dedup.FirstTime(0));  // 0: no id, never deduplicated
}

TEST(PsService, ARetriedPushIsAppliedOnce) {
  Cluster cluster(1, 1, PsMode::kAsync);
  auto stub = rpc::PsService::NewStub(
      grpc::CreateChannel(cluster.endpoints[0], grpc::InsecureChannelCredentials()));
  rpc::PushDenseRequest req;
  req.set_request_id(12345);
  auto* block = req.add_blocks();
  block->set_table("b");
  const std::vector<float> grad{1, 1, 1};
  block->set_values(std::string(reinterpret_cast<const char*>(grad.data()), 12));
  std::vector<float> before(3), after(3);
  cluster.servers[0]->dense("b").Pull(0, before);
  for (int attempt = 0; attempt < 2; ++attempt) {
    grpc::ClientContext ctx;
    rpc::Ack ack;
    ASSERT_TRUE(stub->PushDense(&ctx, req, &ack).ok());
  }
  cluster.servers[0]->dense("b").Pull(0, after);
  // Adam's first step moves each value by about lr = 0.05, once.
  EXPECT_NEAR(before[0] - after[0], 0.05f, 1e-4);
}

}  // namespace
}  // namespace flotilla::ps
