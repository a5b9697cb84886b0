// Writes the seed corpora of the fuzz targets from Flotilla's own encoders
// (real programs, tensors, table images, strategies, store requests), so
// the fuzzers start from inputs that pass the checksums and parse:
//
//   build/fuzz/fuzz_make_seeds tests/fuzz/corpus
//
// Each target's seeds go to <root>/<target>/seed-<name>; existing files are
// overwritten, others (found by fuzzing) kept.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "comm/store/wire.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/common/file_util.h"
#include "flotilla/core/tensor.h"
#include "flotilla/fleet/distributed_strategy.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/checkpoint.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/ps_tables.h"
#include "fuzz/scratch_dir.h"
#include "io/manifest.h"
#include "io/tensor_file.h"
#include "launch/elastic/etcd_client.h"
#include "ps/ps.pb.h"
#include "ps/table_file.h"

namespace flotilla::fuzz {
namespace {

namespace wire = comm::wire;
using Seeds = std::map<std::string, std::string>;

std::string Body(const wire::Writer& w) {
  const auto framed = w.Framed();
  return std::string(framed.begin() + 4, framed.end());
}

// store_frames: flags, then u16-length-prefixed message bodies.
Seeds StoreSeeds() {
  auto session = [](uint8_t flags, std::vector<wire::Writer> messages) {
    FuzzWriter w;
    w.U8(flags);
    for (const auto& m : messages) w.Str(Body(m));
    return w.data();
  };
  using W = wire::Writer;
  Seeds s;
  s["set-get"] = session(0, {W().u8(wire::kSet).str("k").str("value"),
                             W().u8(wire::kGet).str("k").i64(100)});
  s["add"] = session(0, {W().u8(wire::kAdd).str("n").i64(5), W().u8(wire::kAdd).str("n").i64(-2)});
  s["check-wait"] = session(0, {W().u8(wire::kSet).str("a").str("1"),
                                W().u8(wire::kCheck).strs({"a", "b"}),
                                W().u8(wire::kWait).strs({"a"}).i64(10)});
  s["get-missing"] = session(0, {W().u8(wire::kGet).str("absent").i64(5)});
  s["delete"] = session(0, {W().u8(wire::kSet).str("d").str(""), W().u8(wire::kDelete).str("d")});
  s["wrong-secret"] = session(2, {W().u8(wire::kSet).str("k").str("v")});
  const auto framed = W().u8(wire::kSet).str("r").str("v").Framed();
  s["raw"] = FuzzWriter().U8(1).Bytes(std::string(framed.begin(), framed.end())).data();
  return s;
}

// tensor_decode: mode, then a tensor file (mode bit 0: without its CRC).
Seeds TensorSeeds() {
  std::map<std::string, Tensor> tensors;
  Tensor f(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) f.data<float>()[i] = 0.5f * i;
  tensors["f32-2x3"] = f;
  Tensor ids(DType::kInt64, {4});
  for (int i = 0; i < 4; ++i) ids.data<int64_t>()[i] = 7 - i;
  tensors["i64-4"] = ids;
  Tensor scalar(DType::kFloat64, {});
  scalar.data<double>()[0] = -1.25;
  tensors["f64-scalar"] = scalar;
  tensors["i32-0x5"] = Tensor(DType::kInt32, {0, 5});
  Seeds s;
  for (const auto& [name, t] : tensors) {
    const std::string file = io::internal::EncodeTensor(t);
    s[name] = std::string(1, '\0') + file;
    s[name + "-nocrc"] = std::string(1, '\3') + file.substr(0, file.size() - 4);
  }
  return s;
}

// program_proto: a regression network with its backward and SGD ops.
Seeds ProgramSeeds() {
  Program main, startup;
  {
    ProgramGuard guard(main, startup);
    Variable x = layers::data("x", {13});
    Variable y = layers::data("y", {1});
    Variable hidden = layers::fc(x, 8, 1, {}, {}, "relu");
    Variable loss = layers::mean(layers::square_error_cost(layers::fc(hidden, 1), y));
    optimizer::SGD(0.01f).minimize(loss, &startup);
  }
  return {{"regression-main", main.Serialize()}, {"regression-startup", startup.Serialize()}};
}

// distributed_strategy: protobuf text.
Seeds StrategySeeds() {
  fleet::DistributedStrategy s;
  s.set_comm_num(2);
  s.set_localsgd(true);
  s.Set("localsgd_configs.k_steps", 4);
  s.Set("sparse_table_configs.table_class", "ssd");
  s.Set("sparse_table_configs.admit_probability", 0.5);
  return {{"default", fleet::DistributedStrategy().ToText()},
          {"localsgd-ssd", s.ToText()},
          {"a-sync", "a_sync: true\na_sync_configs { k_steps: 8 send_queue_size: 4 }\n"}};
}

// ps_service: mode, then (method, u16-length request) calls.
Seeds PsServiceSeeds() {
  namespace rpc = ps::rpc;
  auto bytes_of = [](const auto& values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(values[0]));
  };
  rpc::PullDenseRequest pull_dense;
  pull_dense.add_blocks()->set_table("w");
  rpc::PushDenseRequest push_dense;
  push_dense.set_request_id(1);
  auto* block = push_dense.add_blocks();
  block->set_table("m");
  block->set_values(bytes_of(std::vector<float>(6, 0.5f)));
  rpc::PullSparseRequest pull_sparse;
  auto* rows = pull_sparse.add_tables();
  rows->set_table("emb");
  rows->set_keys(bytes_of(std::vector<int64_t>{1, 2, -3}));
  rpc::PushSparseRequest push_sparse;
  push_sparse.set_request_id(2);
  auto* grads = push_sparse.add_tables();
  grads->set_table("ctr");
  grads->set_keys(bytes_of(std::vector<int64_t>{4, 4}));
  grads->set_values(bytes_of(std::vector<float>(4, 1.0f)));
  grads->set_learning_rate(0.5f);
  rpc::PushDeltaRequest delta;
  delta.set_request_id(3);
  auto* dd = delta.add_dense();
  dd->set_table("w");
  dd->set_values(bytes_of(std::vector<float>(10, 0.1f)));
  auto* sd = delta.add_sparse();
  sd->set_table("emb");
  sd->set_keys(bytes_of(std::vector<int64_t>{9}));
  sd->set_values(bytes_of(std::vector<float>(4, -1.0f)));
  rpc::BarrierRequest barrier;
  rpc::PathRequest load;
  load.set_dir("ckpt");
  rpc::TrainerRequest trainer;
  trainer.set_trainer_id(1);
  rpc::EchoMessage echo;
  echo.set_payload("ping");
  echo.set_reply_bytes(8);
  const std::vector<std::pair<uint8_t, std::string>> calls = {
      {0, pull_dense.SerializeAsString()},  {1, push_dense.SerializeAsString()},
      {2, pull_sparse.SerializeAsString()}, {3, push_sparse.SerializeAsString()},
      {4, delta.SerializeAsString()},       {5, barrier.SerializeAsString()},
      {6, load.SerializeAsString()},        {7, trainer.SerializeAsString()},
      {8, trainer.SerializeAsString()},     {9, trainer.SerializeAsString()},
      {10, echo.SerializeAsString()}};
  Seeds s;
  for (uint8_t mode = 0; mode < 3; ++mode) {
    FuzzWriter session;
    session.U8(mode);
    for (const auto& [method, request] : calls) {
      session.U8(method).Str(request);
      s["call-" + std::to_string(method)] = FuzzWriter().U8(mode).U8(method).Str(request).data();
    }
    s["session-mode" + std::to_string(mode)] = session.data();
  }
  return s;
}

// ps_table_file: mode (table, whole file, two servers), then an image or file.
Seeds TableFileSeeds() {
  auto server = FuzzServerWithRows();
  std::vector<std::string> images = {server->dense("w").Serialize(), server->dense("m").Serialize(),
                                     server->sparse("emb").Serialize(),
                                     server->sparse("ctr").Serialize()};
  Seeds s;
  for (uint8_t t = 0; t < 4; ++t) {
    const std::string path = ScratchDir() + "/seed.tbl";
    ps::WriteTableFile(path, t < 2 ? ps::TableKind::kDense : ps::TableKind::kSparse, images[t]);
    const std::string name = std::to_string(t);
    s["image-" + name] = std::string(1, char(t)) + images[t];
    s["file-" + name] = std::string(1, char(t | 4)) + ReadFile(path);
    s["two-servers-" + name] = std::string(1, char(t | 8)) + images[t];
  }
  return s;
}

// checkpoint: mode, then a MANIFEST (and files) or a checkpoint root.
Seeds CheckpointSeeds() {
  Scope scope;
  Tensor w(DType::kFloat32, {2, 2});
  for (int i = 0; i < 4; ++i) w.data<float>()[i] = 1.0f + i;
  *scope.Var("fc_0.w_0")->GetMutableTensor() = w;
  *scope.Var("step counter")->GetMutableTensor() = Tensor(DType::kInt64, {1});
  scope.Var("step counter")->GetMutableTensor()->data<int64_t>()[0] = 42;
  const std::string dir = ScratchDir() + "/seed-ckpt";
  io::SaveVars(dir, {"fc_0.w_0", "step counter"}, scope);
  const std::string manifest = ReadFile(dir + "/" + io::internal::kManifestName);
  const std::string body = manifest.substr(0, manifest.rfind("manifest-crc32c"));
  const auto entries = io::internal::ParseManifest(manifest, "seed");
  Seeds s;
  s["manifest"] = std::string(1, '\0') + manifest;
  s["manifest-body"] = std::string(1, '\1') + body;
  for (const auto& e : entries) {
    const std::string one = io::internal::FormatManifest({e});
    const std::string one_body = one.substr(0, one.rfind("manifest-crc32c"));
    s["dir-" + e.file] = FuzzWriter().U8(2).Str(one_body).Bytes(ReadFile(dir + "/" + e.file)).data();
  }
  const std::string state =
      "{\n \"extra\": \"{\\\"lr\\\": 0.1}\",\n \"reader\": {\n  \"batches\": 12,\n  \"pass\": 1\n },\n"
      " \"rng_seed\": 7,\n \"step\": 7\n}\n";
  s["root"] = FuzzWriter().U8(3).Str("step-3.tmp.77").Str("step-99999999999999999999").Bytes(state).data();
  return s;
}

// feed: dtype, rank, dims, buffer.
Seeds FeedSeeds() {
  auto input = [](uint8_t dtype, std::vector<int64_t> dims, size_t bytes) {
    FuzzWriter w;
    w.U8(dtype).U8(static_cast<uint8_t>(dims.size()));
    for (int64_t d : dims) w.I64(d);
    return w.Bytes(std::string(bytes, '\x3f')).data();
  };
  return {{"f32-2x3", input(2, {2, 3}, 24)},
          {"f32-3", input(2, {3}, 12)},
          {"i64-2x3", input(1, {2, 3}, 48)},
          {"f64-scalar", input(3, {}, 8)},
          {"f32-short-buffer", input(2, {4, 3}, 24)}};
}

// etcd_response: operation, then the HTTP response.
Seeds EtcdSeeds() {
  auto b64 = [](const std::string& s) { return launch::EtcdBase64Encode(s); };
  auto http = [](const std::string& body, const std::string& status = "200 OK") {
    return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  auto chunked = [](const std::vector<std::string>& pieces) {
    std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (const auto& p : pieces) {
      char size[32];
      std::snprintf(size, sizeof(size), "%zx\r\n", p.size());
      out += size + p + "\r\n";
    }
    return out + "0\r\n\r\n";
  };
  const std::string kv = "{\"key\":\"" + b64("/job/a") + "\",\"value\":\"" + b64("10.0.0.1:6170") +
                         "\",\"create_revision\":\"2\",\"mod_revision\":\"4\",\"lease\":\"7\"}";
  const std::string range = "{\"header\":{\"revision\":\"5\"},\"kvs\":[" + kv + "],\"count\":\"1\"}";
  Seeds s;
  s["get"] = std::string(1, '\0') + http(range);
  s["get-prefix-chunked"] = std::string(1, '\1') + chunked({range.substr(0, 20), range.substr(20)});
  s["put"] = std::string(1, '\2') + http("{\"header\":{\"revision\":\"6\"}}");
  s["delete"] = std::string(1, '\3') + "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"deleted\":\"1\"}";
  s["grant"] = std::string(1, '\4') + http("{\"ID\":\"7\",\"TTL\":\"10\"}");
  s["keepalive"] = std::string(1, '\5') + http("{\"result\":{\"ID\":\"7\",\"TTL\":\"10\"}}");
  s["revoke-missing"] = std::string(1, '\6') +
      http("{\"error\":\"etcdserver: requested lease not found\",\"code\":5}", "404 Not Found");
  s["txn"] = std::string(1, '\7') + http("{\"header\":{\"revision\":\"8\"},\"succeeded\":true}");
  s["watch"] = std::string(1, '\x8') +
      chunked({"{\"result\":{\"created\":true}}\n",
               "{\"result\":{\"events\":[{\"kv\":" + kv + "},{\"type\":\"DELETE\",\"kv\":" + kv + "}]}}\n"});
  return s;
}

// env_contract: environment lines.
Seeds EnvSeeds() {
  return {{"paddle", "PADDLE_TRAINER_ID=1\nPADDLE_TRAINERS_NUM=4\nPADDLE_TRAINER_ENDPOINTS="
                     "10.0.0.1:6170,10.0.0.2:6170\nPADDLE_CURRENT_ENDPOINT=10.0.0.2:6170\n"},
          {"slurm", "SLURM_PROCID=3\nSLURM_NTASKS=8\nSLURM_LOCALID=1\nSLURM_NODEID=1\n"
                    "SLURM_JOB_NODELIST=node[01-04,07],gpu-a[1-2]\nSLURM_JOB_ID=991\n"},
          {"torch", "RANK=2\nWORLD_SIZE=4\nLOCAL_RANK=0\nMASTER_ADDR=10.1.1.1\nMASTER_PORT=29500\n"
                    "OMP_NUM_THREADS=2\n"},
          {"flotilla", "FLOTILLA_RANK=0\nFLOTILLA_WORLD_SIZE=2\nFLOTILLA_MASTER=127.0.0.1:6170\n"
                       "OMPI_COMM_WORLD_RANK=0\nOMPI_COMM_WORLD_SIZE=2\n"},
          {"lists", "2:4\netcd://127.0.0.1:2379,127.0.0.2:2379/\nrack[1-2]-n[01-03]\n8\n[::1]:80\n"}};
}

}  // namespace
}  // namespace flotilla::fuzz

int main(int argc, char** argv) {
  using namespace flotilla::fuzz;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_ROOT (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  flotilla::RegisterAllOps();
  const std::map<std::string, std::function<Seeds()>> targets = {
      {"store_frames", StoreSeeds},
      {"tensor_decode", TensorSeeds},
      {"program_proto", ProgramSeeds},
      {"distributed_strategy", StrategySeeds},
      {"ps_service", PsServiceSeeds},
      {"ps_table_file", TableFileSeeds},
      {"checkpoint", CheckpointSeeds},
      {"feed", FeedSeeds},
      {"etcd_response", EtcdSeeds},
      {"env_contract", EnvSeeds},
  };
  for (const auto& [target, make] : targets) {
    const std::filesystem::path dir = std::filesystem::path(argv[1]) / target;
    std::filesystem::create_directories(dir);
    for (const auto& [name, bytes] : make()) {
      flotilla::WriteFileAtomic((dir / ("seed-" + name)).string(), bytes);
    }
  }
  return 0;
}
