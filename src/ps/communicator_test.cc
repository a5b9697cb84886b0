#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "flotilla/common/error.h"
#include "flotilla/ps/communicator.h"
#include "flotilla/ps/geo_communicator.h"
#include "flotilla/ps/server.h"
#include "flotilla/ps/trainer_runtime.h"
#include "flotilla/trace/metrics.h"

namespace flotilla::ps {
namespace {

using namespace std::chrono_literals;

// One server with dense "w" (4 floats, SGD lr 0.5, starting at 1), sparse
// "emb" (dim 2, SGD lr 0.5, starting at 0) and sparse "wide" (dim 1,
// starting uniform in [-1, 1)).
std::unique_ptr<PsServer> StartServer(PsMode mode, int num_trainers) {
  PsServerOptions o;
  o.endpoint = "127.0.0.1:0";
  o.mode = mode;
  o.num_trainers = num_trainers;
  auto server = std::make_unique<PsServer>(o);
  DenseTableConfig w;
  w.name = "w";
  w.numel = 4;
  w.rule = MakeUpdateRule(UpdateRuleConfig::Sgd(0.5f));
  w.initializer = InitializerConfig::Constant(1.0f);
  server->AddDenseTable(w);
  SparseTableConfig emb;
  emb.name = "emb";
  emb.dim = 2;
  emb.rule = MakeUpdateRule(UpdateRuleConfig::Sgd(0.5f));
  server->AddSparseTable(emb);
  SparseTableConfig wide;
  wide.name = "wide";
  wide.dim = 1;
  wide.rule = MakeUpdateRule(UpdateRuleConfig::Sgd(0.5f));
  wide.initializer = InitializerConfig::Uniform(-1, 1, 3);
  server->AddSparseTable(wide);
  server->Start();
  return server;
}

Tensor Filled(float v, Dims dims) {
  Tensor t(DType::kFloat32, dims);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = v;
  return t;
}

TEST(AsyncCommunicator, MergesUpToMaxMergeVarNumPerPush) {
  auto server = StartServer(PsMode::kAsync, 1);
  auto client = std::make_shared<PsClient>(std::vector<std::string>{server->endpoint()}, 0, 1);
  CommunicatorOptions o;
  o.send_queue_size = 8;
  o.max_merge_var_num = 4;
  o.independent_recv_thread = false;
  AsyncCommunicator comm(client, o);
  comm.AddDense("w", {4});
  comm.AddSparse("emb");
  // Queued before Start(): the send thread finds 8 gradients and merges 4 at a time.
  for (int i = 0; i < 8; ++i) comm.SendDense("w", Filled(0.25f, {4}));
  comm.SendSparse("emb", SelectedRows({3, 5}, Filled(1.0f, {2, 2}), 10));
  comm.SendSparse("emb", SelectedRows({3}, Filled(1.0f, {1, 2}), 10));
  comm.Start();
  comm.Flush();
  EXPECT_EQ(comm.pushes(), 3);  // w twice, emb once
  Tensor w(DType::kFloat32, {4});
  comm.RecvDense("w", &w);
  EXPECT_EQ(w.ToVector<float>(), std::vector<float>(4, 1.0f - 0.5f * 0.25f * 8));
  Tensor rows = client->PullSparse("emb", std::vector<int64_t>{3, 5});
  EXPECT_EQ(rows.ToVector<float>(), (std::vector<float>{-1, -1, -0.5f, -0.5f}));
  comm.Stop();
}

TEST(AsyncCommunicator, AverageMergeAndIndependentRecvThread) {
  auto server = StartServer(PsMode::kAsync, 1);
  auto client = std::make_shared<PsClient>(std::vector<std::string>{server->endpoint()}, 0, 1);
  CommunicatorOptions o;
  o.merge_average = true;
  o.max_merge_var_num = 4;
  AsyncCommunicator comm(client, o);
  comm.AddDense("w", {2, 2}, 2);
  comm.SendDense("w", Filled(0.5f, {2, 2}));
  comm.SendDense("w", Filled(1.5f, {2, 2}));
  comm.Start();
  comm.Flush();
  Tensor w(DType::kFloat32, {2, 2});
  comm.RecvDense("w", &w);
  EXPECT_EQ(w.ToVector<float>(), std::vector<float>(4, 1.0f - 0.5f * 1.0f));  // one mean step
  comm.Stop();
  EXPECT_THROW(comm.SendDense("w", Filled(0, {2, 2})), InvalidArgument);
  EXPECT_THROW(comm.SendDense("nope", Filled(0, {2, 2})), NotFound);
}

TEST(AsyncCommunicator, FullQueueBlocksTheSenderUntilTheThreadDrainsIt) {
  auto server = StartServer(PsMode::kAsync, 1);
  auto client = std::make_shared<PsClient>(std::vector<std::string>{server->endpoint()}, 0, 1);
  CommunicatorOptions o;
  o.send_queue_size = 2;
  AsyncCommunicator comm(client, o);
  comm.AddDense("w", {4});
  comm.SendDense("w", Filled(0.0f, {4}));
  comm.SendDense("w", Filled(0.0f, {4}));
  auto third = std::async(std::launch::async, [&] { comm.SendDense("w", Filled(0.0f, {4})); });
  EXPECT_EQ(third.wait_for(100ms), std::future_status::timeout);
  comm.Start();
  third.get();
  comm.Stop();
}

TEST(AsyncCommunicator, BackgroundFailureSurfacesInTheTrainer) {
  auto server = StartServer(PsMode::kAsync, 1);
  PsClientOptions co;
  co.retry_timeout = 500ms;
  auto client = std::make_shared<PsClient>(std::vector<std::string>{server->endpoint()}, 0, 1, co);
  AsyncCommunicator comm(client, {});
  comm.AddDense("w", {4});
  comm.Start();
  server.reset();
  comm.SendDense("w", Filled(0.0f, {4}));
  EXPECT_THROW(comm.Flush(), Unavailable);
}

TEST(GeoCommunicator, TwoTrainersPushScaledDeltasEveryKSteps) {
  auto server = StartServer(PsMode::kGeo, 2);
  const std::vector<std::string> eps{server->endpoint()};
  std::vector<std::vector<float>> final(2);
  std::vector<std::vector<float>> rows(2);
  auto trainer = [&](int id) {
    auto client = std::make_shared<PsClient>(eps, id, 2);
    GeoCommunicator geo(client, {.k_steps = 2, .background_sync = false});
    Tensor w = Filled(id == 0 ? 3.0f : 9.0f, {4});  // trainer 0's values win at Init
    geo.AddDense("w", w);
    geo.AddSparse("emb");
    geo.Init();
    EXPECT_EQ(w.ToVector<float>(), std::vector<float>(4, 3.0f));
    std::vector<int64_t> key{7};
    for (int step = 0; step < 2; ++step) {
      float* p = w.mutable_data<float>();
      for (int i = 0; i < 4; ++i) p[i] -= (id + 1) * 1.0f;  // local "optimizer"
      Tensor r = geo.PullSparse("emb", key);
      r.mutable_data<float>()[0] += 2.0f;
      geo.UpdateSparse("emb", key, r);
      EXPECT_EQ(geo.Step(), step == 1);
    }
    client->Barrier();  // both deltas are on the server
    geo.Sync();         // nothing changed locally since: pulls only
    final[id] = w.ToVector<float>();
    rows[id] = client->PullSparse("emb", key).ToVector<float>();
  };
  std::thread t0(trainer, 0), t1(trainer, 1);
  t0.join();
  t1.join();
  // Deltas -2 and -4, each halved: 3 - 1 - 2 = 0.
  EXPECT_EQ(final[0], std::vector<float>(4, 0.0f));
  EXPECT_EQ(final[1], std::vector<float>(4, 0.0f));
  // Each trainer added 4 to the row over two steps, halved: 0 + 2 + 2.
  EXPECT_EQ(rows[0], (std::vector<float>{4.0f, 0.0f}));
}

// Background syncs lose and repeat nothing: whatever the timing, the
// servers end with the seed plus every trainer's scaled local progress,
// dense and sparse, and a trainer's progress made while its sync was on
// the wire is kept and pushed by a later sync.
TEST(GeoCommunicator, BackgroundSyncsPushEveryLocalChangeOnce) {
  auto server = StartServer(PsMode::kGeo, 2);
  const std::vector<std::string> eps{server->endpoint()};
  std::vector<std::vector<float>> local(2);
  auto trainer = [&](int id) {
    auto client = std::make_shared<PsClient>(eps, id, 2);
    GeoCommunicator geo(client, {.k_steps = 2, .background_sync = true});
    Tensor w = Filled(3.0f, {4});
    geo.AddDense("w", w);
    geo.AddSparse("emb");
    geo.Init();
    const std::vector<int64_t> key{7};
    for (int step = 0; step < 7; ++step) {
      float* p = w.mutable_data<float>();
      for (int i = 0; i < 4; ++i) p[i] -= (id + 1) * 1.0f;
      Tensor r = geo.PullSparse("emb", key);
      r.mutable_data<float>()[1] += 2.0f;
      geo.UpdateSparse("emb", key, r);
      EXPECT_EQ(geo.Step(), step % 2 == 1);
    }
    geo.Sync();  // the last step's change, after the background one
    local[id] = w.ToVector<float>();
    client->Barrier();
  };
  std::thread t0(trainer, 0), t1(trainer, 1);
  t0.join();
  t1.join();
  PsClient reader(eps, 0, 2);
  Tensor w(DType::kFloat32, {4});
  reader.PullDense("w", &w);
  // 3 - (7 * 1 + 7 * 2) / 2 and 0 + (7 * 2 + 7 * 2) / 2.
  EXPECT_EQ(w.ToVector<float>(), std::vector<float>(4, -7.5f));
  EXPECT_EQ(reader.PullSparse("emb", std::vector<int64_t>{7}).ToVector<float>(), (std::vector<float>{0.0f, 14.0f}));
  for (const auto& values : local) {  // each saw at least its own progress
    EXPECT_LE(values[0], 3.0f - 3.5f) << values[0];
  }
}

// Prefetch brings every table's rows into the cache in one round trip:
// with the servers gone, the lookups of the prefetched keys still read the
// servers' rows (a repeated key and a key cached before included).
TEST(GeoCommunicator, PrefetchedRowsAreReadWithoutTheServers) {
  std::vector<std::unique_ptr<PsServer>> servers;
  servers.push_back(StartServer(PsMode::kGeo, 1));
  servers.push_back(StartServer(PsMode::kGeo, 1));
  auto client = std::make_shared<PsClient>(
      std::vector<std::string>{servers[0]->endpoint(), servers[1]->endpoint()}, 0, 1);
  const std::vector<int64_t> emb_keys{3, 8, 3, 5}, wide_keys{2, 9, 4, 7, 10};
  client->InitSparse("emb", std::vector<int64_t>{3, 8, 5},
                     Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
  const std::vector<float> wide_rows = client->PullSparse("wide", wide_keys).ToVector<float>();
  GeoCommunicator geo(client, {.k_steps = 100});
  geo.AddSparse("emb");
  geo.AddSparse("wide");
  geo.PullSparse("wide", std::vector<int64_t>{9});  // cached before the prefetch
  geo.Prefetch(std::vector<GeoCommunicator::TableKeys>{{"emb", emb_keys}, {"wide", wide_keys}});
  servers.clear();
  EXPECT_EQ(geo.PullSparse("emb", emb_keys).ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 1, 2, 5, 6}));
  EXPECT_EQ(geo.PullSparse("wide", wide_keys).ToVector<float>(), wide_rows);
}

// Gather writes each id's row (prefetched or fetched now), zeros for the
// padding id, and refuses a width other than the table's.
TEST(GeoCommunicator, GatherWritesEachIdsRowAndZerosForPadding) {
  auto server = StartServer(PsMode::kGeo, 1);
  auto client = std::make_shared<PsClient>(std::vector<std::string>{server->endpoint()}, 0, 1);
  client->InitSparse("emb", std::vector<int64_t>{3, 8}, Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}));
  GeoCommunicator geo(client, {.k_steps = 100});
  geo.AddSparse("emb");
  geo.Prefetch(std::vector<GeoCommunicator::TableKeys>{{"emb", std::vector<int64_t>{3, 8, 3}}});
  const std::vector<int64_t> ids{3, 0, 8, 3, 5};  // 0 pads; 5 was not prefetched
  std::vector<float> out(ids.size() * 2, -1.0f);
  EXPECT_EQ(geo.Gather("emb", ids, /*padding_idx=*/0, out.data(), 2), 4);
  EXPECT_EQ(out, (std::vector<float>{1, 2, 0, 0, 3, 4, 1, 2, 0, 0}));
  try {
    geo.Gather("emb", ids, 0, out.data(), 3);
    ADD_FAILURE() << "a lookup of width 3 read a table of width 2";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'emb'"), std::string::npos) << e.what();
  }
}

// PullSparse calls the servers of this process answered whose first table
// is `table`.
uint64_t ServedPulls(const std::string& table) {
  return trace::MetricsRegistry::Global()
      .GetHistogram("flotilla_rpc_served_seconds", "Time to handle a parameter-server call",
                    trace::LatencyBuckets(), {{"method", "PullSparse"}, {"table", table}})
      .count();
}

// PrefetchNext pulls a batch's rows ahead while the current batch runs;
// the Prefetch of that batch takes them without a second pull, unless a
// sync came between.
TEST(GeoCommunicator, RowsPulledAheadServeTheirBatchUnlessASyncCameBetween) {
  auto server = StartServer(PsMode::kGeo, 1);
  auto client = std::make_shared<PsClient>(std::vector<std::string>{server->endpoint()}, 0, 1);
  GeoCommunicator geo(client, {.k_steps = 100});
  geo.AddSparse("emb");
  geo.AddSparse("wide");
  const std::vector<int64_t> emb_keys{1, 2, 3}, wide_keys{4, 5, 4};
  const std::vector<GeoCommunicator::TableKeys> batch{{"emb", emb_keys}, {"wide", wide_keys}};
  const uint64_t before = ServedPulls("emb");
  const std::vector<int64_t> current_emb{20}, current_wide{21};
  geo.PrefetchNext(batch);
  geo.Prefetch(std::vector<GeoCommunicator::TableKeys>{{"emb", current_emb}, {"wide", current_wide}});
  geo.Prefetch(batch);
  EXPECT_EQ(ServedPulls("emb"), before + 2) << "the rows pulled ahead were pulled again";
  EXPECT_EQ(geo.PullSparse("wide", wide_keys).ToVector<float>(),
            client->PullSparse("wide", wide_keys).ToVector<float>());
  EXPECT_EQ(geo.PullSparse("emb", emb_keys).ToVector<float>(), std::vector<float>(6, 0.0f));

  const std::vector<int64_t> next_keys{1, 9};
  const std::vector<GeoCommunicator::TableKeys> next{{"emb", next_keys}, {"wide", wide_keys}};
  geo.PrefetchNext(next);  // 9 is pulled ahead (1 is cached)
  Tensor row = geo.PullSparse("emb", std::vector<int64_t>{1});
  row.mutable_data<float>()[0] = 4.0f;
  geo.UpdateSparse("emb", std::vector<int64_t>{1}, row);
  geo.Sync();  // pushes row 1's delta and drops the cache
  geo.Prefetch(next);
  EXPECT_EQ(ServedPulls("emb"), before + 4) << "rows pulled ahead of a sync were not pulled again";
  EXPECT_EQ(geo.PullSparse("emb", next_keys).ToVector<float>(), (std::vector<float>{4, 0, 0, 0}));
}

TEST(TrainerRuntime, FinishFlushesTellsServersAndUninstalls) {
  auto server = StartServer(PsMode::kAsync, 1);
  auto run = std::async(std::launch::async, [&] { server->Run(); });
  EXPECT_THROW(RequireTrainerRuntime("op 'send'"), NotFound);
  auto runtime = std::make_shared<TrainerRuntime>();
  runtime->mode = PsMode::kAsync;
  runtime->client = std::make_shared<PsClient>(std::vector<std::string>{server->endpoint()}, 0, 1);
  runtime->async = std::make_shared<AsyncCommunicator>(runtime->client, CommunicatorOptions{});
  runtime->async->AddDense("w", {4});
  runtime->async->Start();
  InstallTrainerRuntime(runtime);
  RequireTrainerRuntime("op 'send'")->async->SendDense("w", Filled(1.0f, {4}));
  FinishTrainerRuntime();  // flushes the queued gradient, then TrainerFinished
  run.get();               // the only trainer finished: Run() returned
  EXPECT_EQ(CurrentTrainerRuntime(), nullptr);
  std::vector<float> w(4);
  server->dense("w").Pull(0, w);
  EXPECT_EQ(w, std::vector<float>(4, 0.5f));
  FinishTrainerRuntime();  // no runtime: nothing to do
}

}  // namespace
}  // namespace flotilla::ps
