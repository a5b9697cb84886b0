// MPISymetricRoleMaker's parameter-server layout (Paddle's): under
// `mpirun -np 2N` each node runs one server and one worker; even ranks are
// servers, odd ranks workers. Each server holds a free port on its address
// until its service binds it, and publishes "ip:port" through the ranks'
// store; every rank waits for all N.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "flotilla/comm/file_store.h"
#include "flotilla/comm/prefix_store.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/fleet/role_maker.h"

namespace flotilla::fleet {

// A port bound on `ip` with SO_REUSEADDR and SO_REUSEPORT and never
// listened on: no other program takes it, while the parameter server
// (which binds with SO_REUSEPORT) can. Closed with the role maker.
class MPISymetricRoleMaker::PortHold {
 public:
  explicit PortHold(const std::string& ip) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FLOTILLA_CHECK(fd_ >= 0, Unavailable, "MPISymetricRoleMaker: socket(): ", std::strerror(errno));
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    FLOTILLA_CHECK(::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) == 1, InvalidArgument,
                   "MPISymetricRoleMaker: POD_IP='", ip, "' is not an IPv4 address");
    FLOTILLA_CHECK(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0, Unavailable,
                   "MPISymetricRoleMaker: cannot bind a port on ", ip, ": ", std::strerror(errno));
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~PortHold() { ::close(fd_); }
  PortHold(const PortHold&) = delete;
  PortHold& operator=(const PortHold&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

namespace {

std::shared_ptr<comm::Store> OpenRankStore(const std::string& address, std::chrono::milliseconds timeout) {
  if (StartsWith(address, "file:")) return std::make_shared<comm::FileStore>(address.substr(5));
  comm::TCPStoreOptions opts;
  opts.timeout = timeout;
  opts.connect_timeout = timeout;
  opts.token = RequireJobSecret(StrCat("MPISymetricRoleMaker (the ranks' store at ", address, ")"));
  return comm::ConnectStore(address, opts);
}

}  // namespace

void MPISymetricRoleMaker::UseParameterServerLayout() {
  const int ranks = info_.worker_num;
  const int rank = info_.worker_index;
  FLOTILLA_CHECK(ranks % 2 == 0, InvalidArgument, "MPISymetricRoleMaker: the parameter-server layout runs one "
                 "server and one worker per node, so it needs an even number of ranks; OMPI_COMM_WORLD_SIZE=",
                 ranks);
  const std::chrono::milliseconds timeout{
      1000 * env::GetIntInRange("FLOTILLA_RENDEZVOUS_TIMEOUT", 120, 1, kMaxTimeoutMs / 1000)};
  comm::PrefixStore store("mpi_ps", OpenRankStore(info_.store_address, timeout));
  info_.is_collective = false;
  info_.worker_num = ranks / 2;
  info_.store_address.clear();  // parameter-server workers meet at the servers
  if (rank % 2 == 0) {
    const std::string ip = env::GetOr("POD_IP", "127.0.0.1");
    port_ = std::make_shared<PortHold>(ip);
    info_.role = Role::kServer;
    info_.worker_index = -1;
    info_.server_index = rank / 2;
    info_.current_endpoint = StrCat(ip, ":", port_->port());
    store.setString(StrCat("server/", info_.server_index), info_.current_endpoint);
  } else {
    info_.role = Role::kWorker;
    info_.worker_index = rank / 2;
  }
  std::vector<std::string> keys;
  for (int i = 0; i < ranks / 2; ++i) keys.push_back(StrCat("server/", i));
  store.wait(keys, timeout);
  info_.server_endpoints.clear();
  for (const auto& key : keys) info_.server_endpoints.push_back(store.getString(key));
  log::Info("MPISymetricRoleMaker: rank {} is {} {} of {} servers ({})", rank,
            info_.role == Role::kServer ? "server" : "worker",
            info_.role == Role::kServer ? info_.server_index : info_.worker_index, ranks / 2,
            Join(info_.server_endpoints, ","));
}

}  // namespace flotilla::fleet
