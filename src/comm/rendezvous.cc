#include "comm/rendezvous.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"

namespace flotilla::comm {

using Clock = std::chrono::steady_clock;

namespace {

std::vector<int> MissingRanks(Store& store, const std::vector<std::string>& keys_by_rank) {
  std::vector<int> missing;
  for (size_t i = 0; i < keys_by_rank.size(); ++i) {
    if (!keys_by_rank[i].empty() && !store.check({keys_by_rank[i]})) {
      missing.push_back(static_cast<int>(i));
    }
  }
  return missing;
}

}  // namespace

std::string RankList(const std::vector<int>& ranks) {
  std::vector<std::string> parts;
  for (int r : ranks) parts.push_back(std::to_string(r));
  return "[" + Join(parts, ", ") + "]";
}

void WaitForRanks(Store& store, const std::vector<std::string>& keys_by_rank,
                  const std::string& what, std::chrono::milliseconds timeout,
                  std::chrono::milliseconds stall_after) {
  std::vector<std::string> keys;
  for (const auto& k : keys_by_rank) {
    if (!k.empty()) keys.push_back(k);
  }
  auto start = Clock::now();
  auto deadline = start + timeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto slice = std::max(std::min(left, stall_after), std::chrono::milliseconds(1));
    try {
      store.wait(keys, slice);
      return;
    } catch (const DeadlineExceeded&) {
    }
    std::vector<int> missing = MissingRanks(store, keys_by_rank);
    if (missing.empty()) return;
    auto waited = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start);
    FLOTILLA_CHECK(Clock::now() < deadline, DeadlineExceeded, what, ": ranks ", RankList(missing),
                   " did not join within ", timeout.count(), "ms");
    log::Warn("{}: still waiting for ranks {} after {}s", what, RankList(missing), waited.count());
  }
}

std::vector<PeerInfo> Rendezvous(Store& store, int rank, int size, const std::string& host_id,
                                 std::chrono::milliseconds timeout,
                                 std::chrono::milliseconds stall_after) {
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back("join/" + std::to_string(r));
  store.setString(keys[rank], host_id + "\n" + std::to_string(::getpid()));
  WaitForRanks(store, keys, StrCat("process group (rank ", rank, " of ", size, ")"), timeout,
               stall_after);
  std::vector<PeerInfo> peers(size);
  for (int r = 0; r < size; ++r) {
    std::string v = store.getString(keys[r]);
    auto nl = v.rfind('\n');
    FLOTILLA_CHECK(nl != std::string::npos, Corruption, "bad join record of rank ", r);
    peers[r].host_id = v.substr(0, nl);
    peers[r].pid = ParseInt(v.substr(nl + 1), "pid of rank " + std::to_string(r));
  }
  return peers;
}

bool ProcessIsDead(int64_t pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  // After "(comm) ": state ppid pgrp session tty_nr tpgid flags.
  std::istringstream fields(line.substr(paren + 2));
  char state = 0;
  int64_t skip = 0;
  uint64_t flags = 0;
  fields >> state >> skip >> skip >> skip >> skip >> skip >> flags;
  // A killed process closes its files (its peers see their connections
  // close) before it turns zombie; it is already marked as exiting then.
  constexpr uint64_t kExiting = 0x4;  // PF_EXITING
  return state == 'Z' || state == 'X' || (fields && (flags & kExiting));
}

std::string LocalHostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace flotilla::comm
