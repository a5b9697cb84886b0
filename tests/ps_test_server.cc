// A parameter server process for tests/ps_multiprocess_test: serves dense
// "w" (20000 floats, SGD 0.1, starting at 1) and sparse "emb" (dim 4) on a
// loopback port chosen by the OS, writes the port to --port_file, and exits 0
// once every trainer has finished.
//
//   ps_test_server --index 0 --num_servers 2 --num_trainers 2 --mode sync --port_file f
#include <cstdio>
#include <cstring>
#include <string>

#include "flotilla/common/file_util.h"
#include "flotilla/ps/server.h"

using namespace flotilla;
using namespace flotilla::ps;

int main(int argc, char** argv) {
  PsServerOptions o;
  o.endpoint = "127.0.0.1:0";
  std::string port_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--index") o.server_index = std::stoi(value);
    else if (flag == "--num_servers") o.num_servers = std::stoi(value);
    else if (flag == "--num_trainers") o.num_trainers = std::stoi(value);
    else if (flag == "--mode") o.mode = ParsePsMode(value);
    else if (flag == "--port_file") port_file = value;
    else if (flag == "--token") o.token = value;
  }
  try {
    PsServer server(o);
    DenseTableConfig w;
    w.name = "w";
    w.numel = 20000;
    w.rule = MakeUpdateRule(UpdateRuleConfig::Sgd(0.1f));
    w.initializer = InitializerConfig::Constant(1.0f);
    server.AddDenseTable(w);
    SparseTableConfig emb;
    emb.name = "emb";
    emb.dim = 4;
    emb.rule = MakeUpdateRule(UpdateRuleConfig::Sgd(0.1f));
    server.AddSparseTable(emb);
    server.Start();
    WriteFileAtomic(port_file, std::to_string(server.port()));
    server.Run();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ps_test_server: %s\n", e.what());
    return 1;
  }
}
