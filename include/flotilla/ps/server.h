// PsServer: one parameter-server process's tables behind the gRPC service.
//
//   PsServerOptions opt;  opt.endpoint = "0.0.0.0:6174"; opt.num_trainers = 2;
//   PsServer server(opt);
//   server.AddDenseTable({.name = "fc_0.w_0", .numel = 13, .rule = MakeUpdateRule(...)});
//   server.Run();   // serves until every trainer called Finish() (or Stop())
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "flotilla/common/tls_files.h"
#include "flotilla/ps/dense_table.h"
#include "flotilla/ps/slicing.h"
#include "flotilla/ps/sparse_table.h"

namespace flotilla::ps {

// sync: pushes of a step are summed and applied, averaged over the trainers,
//       when the last trainer reaches the barrier;
// async: each push is applied on arrival; barriers only synchronise;
// geo:   like async; trainers push parameter deltas (PushDelta).
enum class PsMode { kSync, kAsync, kGeo };
const char* PsModeName(PsMode mode);
// "sync" | "async" | "geo"; throws InvalidArgument naming the string.
PsMode ParsePsMode(const std::string& name);

struct PsServerOptions {
  // host:port to listen on; port 0 picks a free port (see PsServer::port()).
  std::string endpoint = "0.0.0.0:0";
  int server_index = 0;  // this server's index in the trainers' endpoint list
  int num_servers = 1;
  int num_trainers = 1;
  PsMode mode = PsMode::kSync;
  // When non-empty, every request must carry this token (PsClientOptions::token),
  // compared in constant time; a job's servers use the job secret.
  std::string token;
  // TLS (flotilla/common/tls_files.h): when enabled the server serves TLS
  // only, with cert/key, and demands a client certificate signed by `ca`
  // when one is given (mutual TLS). Default: plaintext.
  TlsFiles tls;
  // A trainer waiting longer than this in a barrier gets DeadlineExceeded
  // naming the trainers that did not arrive.
  std::chrono::milliseconds barrier_timeout{std::chrono::minutes(10)};
  // The trainers' sparse placement (PsClientOptions::slicer): Load keeps
  // the rows it assigns here when the tables were saved by another number
  // of servers.
  SparseSlicer sparse_slicer = ModSlicer;
  // The directory Save/Load requests from trainers are confined to: a
  // relative path is taken under it, an absolute one must lie inside it,
  // and a path with ".." is refused. Empty: FLOTILLA_PS_MODEL_DIR, else the
  // server's working directory when it starts.
  std::string model_root;
  // Largest request or reply on the wire (both directions); larger ones
  // fail with RESOURCE_EXHAUSTED before any handler runs.
  int max_message_bytes = 256 << 20;
};

// Thread-safe after Start(). Tables must be added before Start(); their
// contents may be read and written (Save/Load, seeding) at any time.
class PsServer {
 public:
  explicit PsServer(PsServerOptions options);
  // Stops serving (as Stop()) and waits until every Run() in progress, on
  // any thread, has returned.
  ~PsServer();
  PsServer(const PsServer&) = delete;
  PsServer& operator=(const PsServer&) = delete;

  // Throws AlreadyExists for a duplicate name, InvalidArgument after Start().
  void AddDenseTable(DenseTableConfig config);
  void AddSparseTable(SparseTableConfig config);
  // Throws NotFound naming the table.
  DenseTable& dense(const std::string& name);
  SparseTable& sparse(const std::string& name);
  bool has_sparse(const std::string& name) const;
  std::vector<std::string> table_names() const;

  // Binds and starts serving in the background. Throws Unavailable naming
  // the endpoint when it cannot bind.
  void Start();
  // The bound port (valid after Start()).
  int port() const;
  // "host:port" with the bound port; host 0.0.0.0 is reported as 127.0.0.1.
  std::string endpoint() const;
  // Starts if needed, then blocks until every trainer has finished or Stop()
  // was called; then shuts the service down (pending barriers fail with
  // Unavailable) and returns.
  void Run();
  // Makes Run() return; safe from any thread, including RPC handlers.
  void Stop();
  // Trainers that have called Finish(), ascending.
  std::vector<int> finished_trainers() const;

  // Writes one table file per table into dir (created when missing); each
  // file is checksummed and written atomically. Throws Unavailable on I/O.
  // (Local calls take any path; requests over RPC are confined to
  // options().model_root.)
  void Save(const std::string& dir) const;
  // Reads the files written by Save() with the same table set and server
  // count. Throws NotFound for a missing file, Corruption naming the file
  // for a damaged or mismatching one (tables are then left unchanged only
  // for files not yet read).
  void Load(const std::string& dir);
  // Ends a pass on every sparse table (SparseTable::Shrink); returns the
  // rows dropped.
  int64_t Shrink();

  const PsServerOptions& options() const;
  // Requests refused so far for a missing or wrong token. Thread-safe.
  int64_t refused_requests() const;

  struct State;  // shared with the service implementation

 private:
  std::unique_ptr<State> state_;
};

}  // namespace flotilla::ps
