// What a parameter server accepts from a caller: directories confined to
// its model directory, bounded message and reply sizes, and a lifetime that
// waits for a Run() on another thread.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "flotilla/common/file_util.h"
#include "flotilla/ps/server.h"
#include "ps/ps.grpc.pb.h"
#include "ps/server_state.h"

namespace flotilla::ps {
namespace {

namespace fs = std::filesystem;

class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string pattern = "/tmp/flotilla_ps_bounds_XXXXXX";
    path_ = ::mkdtemp(pattern.data());
  }
  ~ScopedTempDir() { RemoveAll(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::unique_ptr<PsServer> StartServer() {
  PsServerOptions o;
  o.endpoint = "127.0.0.1:0";
  auto server = std::make_unique<PsServer>(o);
  DenseTableConfig c;
  c.name = "w";
  c.numel = 4;
  c.rule = MakeUpdateRule(UpdateRuleConfig::Sgd(0.1f));
  server->AddDenseTable(c);
  server->Start();
  return server;
}

std::unique_ptr<rpc::PsService::Stub> Stub(const PsServer& server) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  args.SetMaxReceiveMessageSize(-1);
  return rpc::PsService::NewStub(
      grpc::CreateCustomChannel(server.endpoint(), grpc::InsecureChannelCredentials(), args));
}

grpc::Status SaveRpc(rpc::PsService::Stub& stub, const std::string& dir) {
  grpc::ClientContext ctx;
  rpc::PathRequest req;
  req.set_dir(dir);
  rpc::Ack ack;
  return stub.Save(&ctx, req, &ack);
}

TEST(PsServiceBounds, SaveAndLoadPathsStayInTheModelDirectory) {
  ScopedTempDir root, elsewhere;
  ::setenv("FLOTILLA_PS_MODEL_DIR", root.path().c_str(), 1);
  auto server = StartServer();
  ::unsetenv("FLOTILLA_PS_MODEL_DIR");
  auto stub = Stub(*server);
  for (const std::string& dir : {elsewhere.path() + "/evil", std::string("../escaped"),
                                 std::string("ok/../../escaped"), root.path() + "/../escaped",
                                 std::string("/etc/flotilla_should_not_exist")}) {
    grpc::Status s = SaveRpc(*stub, dir);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << dir << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(dir), std::string::npos) << s.error_message();
  }
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));
  EXPECT_FALSE(fs::exists(fs::path(root.path()).parent_path() / "escaped"));
  // Inside the root, relative or absolute, saves work.
  EXPECT_TRUE(SaveRpc(*stub, "ckpt/1").ok());
  EXPECT_TRUE(SaveRpc(*stub, root.path() + "/ckpt/2").ok());
  EXPECT_TRUE(fs::exists(root.path() + "/ckpt/1"));
  EXPECT_TRUE(fs::exists(root.path() + "/ckpt/2"));
  grpc::ClientContext ctx;
  rpc::PathRequest req;
  req.set_dir(elsewhere.path());
  rpc::Ack ack;
  EXPECT_EQ(stub->Load(&ctx, req, &ack).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// Issue 32, finding 7: the confinement checked only the path's text; a
// symbolic link inside the model root let a Save write outside it.
TEST(PsServiceBounds, ALinkInsideTheModelDirectoryCannotLeadASaveOut) {
  ScopedTempDir root, elsewhere;
  ::setenv("FLOTILLA_PS_MODEL_DIR", root.path().c_str(), 1);
  auto server = StartServer();
  ::unsetenv("FLOTILLA_PS_MODEL_DIR");
  auto stub = Stub(*server);
  fs::create_directory_symlink(elsewhere.path(), root.path() + "/link");
  for (const std::string& dir : {std::string("link"), std::string("link/ckpt"),
                                 root.path() + "/link/deeper/ckpt"}) {
    grpc::Status s = SaveRpc(*stub, dir);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << dir << ": " << s.error_message();
    EXPECT_NE(s.error_message().find("link' is refused: it is a symbolic link"), std::string::npos)
        << s.error_message();
  }
  EXPECT_TRUE(fs::is_empty(elsewhere.path())) << "a Save wrote through the link";
  grpc::ClientContext ctx;
  rpc::PathRequest req;
  req.set_dir("link");
  rpc::Ack ack;
  EXPECT_EQ(stub->Load(&ctx, req, &ack).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// A checkpoint's tables go into its temporary directory, which a failed
// save removes: a server saving late must not recreate it.
TEST(PsServiceBounds, ASaveIntoAMissingParentCreatesNothingWhenAskedNotTo) {
  ScopedTempDir root;
  ::setenv("FLOTILLA_PS_MODEL_DIR", root.path().c_str(), 1);
  auto server = StartServer();
  ::unsetenv("FLOTILLA_PS_MODEL_DIR");
  auto stub = Stub(*server);
  grpc::ClientContext ctx;
  rpc::PathRequest req;
  req.set_dir("step-40.tmp.0a1b/ps_tables");
  req.set_parent_must_exist(true);
  rpc::Ack ack;
  EXPECT_FALSE(stub->Save(&ctx, req, &ack).ok());
  EXPECT_TRUE(fs::is_empty(root.path()));
  fs::create_directory(root.path() + "/step-40.tmp.0a1b");
  grpc::ClientContext again;
  EXPECT_TRUE(stub->Save(&again, req, &ack).ok());
  EXPECT_TRUE(fs::exists(root.path() + "/step-40.tmp.0a1b/ps_tables/w.server0-of-1.tbl"));
}

TEST(PsServiceBounds, OversizedRequestsAreRefusedBeforeAnyHandler) {
  auto server = StartServer();
  auto stub = Stub(*server);
  rpc::PushDenseRequest req;
  auto* block = req.add_blocks();
  block->set_table("w");
  block->set_values(std::string((256u << 20) + 16, '\0'));
  grpc::ClientContext ctx;
  rpc::Ack ack;
  EXPECT_EQ(stub->PushDense(&ctx, req, &ack).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST(PsServiceBounds, EchoRepliesAreBounded) {
  auto server = StartServer();
  auto stub = Stub(*server);
  for (int64_t asked : {int64_t{1} << 40, int64_t{-1}}) {
    rpc::EchoMessage req, resp;
    req.set_reply_bytes(asked);
    grpc::ClientContext ctx;
    grpc::Status s = stub->Echo(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << asked << ": " << s.error_message();
  }
  rpc::EchoMessage req, resp;
  req.set_reply_bytes(1000);
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->Echo(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.payload().size(), 1000u);
}

// A Run() on another thread must be over before the server's memory goes.
// The runner is held at its last touch of the server's state (the test
// hook) for 300 ms: ~PsServer may only return after it was let go, whether
// the destructor or the runner shut the service down.
TEST(PsServerLifetime, TheDestructorWaitsForARunOnAnotherThread) {
  const std::thread::id test_thread = std::this_thread::get_id();
  std::atomic<bool> runner_released{false};
  PsServer::State::before_run_returns = [&] {
    if (std::this_thread::get_id() == test_thread) return;  // the destructor's own Run()
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    runner_released = true;
  };
  for (bool runner_stops : {false, true}) {
    runner_released = false;
    auto server = StartServer();
    PsServer* raw = server.get();
    std::thread runner([raw] { raw->Run(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // Run() is waiting
    if (runner_stops) raw->Stop();
    server.reset();
    EXPECT_TRUE(runner_released) << "~PsServer returned while a Run() on another thread was "
                                    "still inside (runner_stops=" << runner_stops << ")";
    runner.join();
  }
  PsServer::State::before_run_returns = nullptr;
}

}  // namespace
}  // namespace flotilla::ps
