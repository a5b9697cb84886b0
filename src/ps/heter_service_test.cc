// The trainer ↔ heter worker RPC over loopback: batches in flight at once,
// replies matched to requests, the token, errors and TrainerDone.
#include "flotilla/ps/heter_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "flotilla/common/error.h"
#include "flotilla/trace/standard_metrics.h"

namespace flotilla::ps {
namespace {

using namespace std::chrono_literals;

// Doubles "x" into "y"; "fail" in the batch makes it throw.
NamedTensors Double(int, const NamedTensors& in, const std::vector<std::string>&) {
  for (const auto& [name, t] : in) {
    if (name == "fail") FLOTILLA_THROW(InvalidArgument, "batch asked to fail");
  }
  const Tensor& x = in.at(0).second;
  Tensor y(DType::kFloat32, x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = 2 * x.data<float>()[i];
  y.ShareLoD(x);
  return {{"y", y}};
}

std::string Loopback(const HeterServer& s) { return "127.0.0.1:" + std::to_string(s.port()); }

TEST(HeterService, BatchesInFlightComeBackMatchedAndDoneEndsRun) {
  std::atomic<int> done_calls{0};
  HeterServer server({.endpoint = "127.0.0.1:0", .num_trainers = 2, .token = "s3cret"}, Double,
                     [&](int) { ++done_calls; });
  server.Start();
  std::thread run([&] { server.Run(); });
  HeterClient a(Loopback(server), 0, {.token = "s3cret"});
  HeterClient b(Loopback(server), 1, {.token = "s3cret"});
  std::vector<std::future<NamedTensors>> flying;
  for (int i = 0; i < 8; ++i) {
    HeterClient& c = i % 2 == 0 ? a : b;
    Tensor x = Tensor::FromVector<float>({float(i), float(i) + 0.5f}, {1, 2});
    if (i == 3) x.set_lod({{0, 0, 1}});  // sequence offsets travel both ways
    flying.push_back(c.Run(i, {{"x", x}}));
  }
  for (int i = 0; i < 8; ++i) {
    NamedTensors r = flying[i].get();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].first, "y");
    EXPECT_EQ(r[0].second.dims(), (Dims{1, 2}));
    EXPECT_FLOAT_EQ(r[0].second.data<float>()[0], 2.0f * i);
    EXPECT_FLOAT_EQ(r[0].second.data<float>()[1], 2.0f * i + 1);
    EXPECT_EQ(r[0].second.lod(), i == 3 ? (LoD{{0, 0, 1}}) : LoD{});
  }
  EXPECT_EQ(server.batches(), 8);
  a.Done();
  EXPECT_EQ(done_calls.load(), 1);
  b.Done();
  run.join();  // both trainers are done: Run() returned
  EXPECT_EQ(done_calls.load(), 2);
}

TEST(HeterService, WrongTokenAndHandlerErrorsAreReportedWithTheWorker) {
  HeterServer server({.endpoint = "127.0.0.1:0", .name = "heter worker 1", .token = "s3cret"}, Double);
  server.Start();
  const double refusals = trace::AuthRefusals("ps");
  HeterClient bad(Loopback(server), 0, {.token = "guess", .timeout = 5s});
  try {
    bad.Run(0, {{"x", Tensor::FromVector<float>({1}, {1})}}).get();
    FAIL() << "a request with the wrong token was served";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("refused by heter worker 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(trace::AuthRefusals("ps"), refusals + 1) << "counted in /metrics";
  HeterClient good(Loopback(server), 0, {.token = "s3cret", .timeout = 5s});
  try {
    good.Run(1, {{"x", Tensor::FromVector<float>({1}, {1})}, {"fail", Tensor::FromVector<float>({1}, {1})}}).get();
    FAIL() << "the handler's error was lost";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("batch asked to fail"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("heter worker at 127.0.0.1:"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.batches(), 0);
}

TEST(HeterService, AWorkerThatIsGoneIsNamed) {
  int port = 0;
  {
    HeterServer gone({.endpoint = "127.0.0.1:0"}, Double);
    gone.Start();
    port = gone.port();
  }
  HeterClient c("127.0.0.1:" + std::to_string(port), 0, {.timeout = 1s});
  try {
    c.Run(0, {{"x", Tensor::FromVector<float>({1}, {1})}}).get();
    FAIL() << "a batch reached a stopped worker";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("heter worker at 127.0.0.1:" + std::to_string(port)),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flotilla::ps
