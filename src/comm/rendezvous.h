// Joining a group through a Store (private to comm).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "flotilla/comm/store.h"

namespace flotilla::comm {

struct PeerInfo {
  std::string host_id;
  int64_t pid = 0;
};

// Waits until every key in `keys_by_rank` exists (entry i belongs to rank i;
// empty entries are skipped). Warns every `stall_after` naming the ranks not
// yet present; after `timeout` throws DeadlineExceeded naming them, with
// `what` saying what they did not join.
void WaitForRanks(Store& store, const std::vector<std::string>& keys_by_rank,
                  const std::string& what, std::chrono::milliseconds timeout,
                  std::chrono::milliseconds stall_after);

// Publishes this rank's host id and pid and returns every rank's.
std::vector<PeerInfo> Rendezvous(Store& store, int rank, int size, const std::string& host_id,
                                 std::chrono::milliseconds timeout,
                                 std::chrono::milliseconds stall_after);

// True when `pid` names a process that has exited, is a zombie, or is
// exiting (killed: its files may already be closed).
bool ProcessIsDead(int64_t pid);

// "[1, 3]"
std::string RankList(const std::vector<int>& ranks);

std::string LocalHostname();

}  // namespace flotilla::comm
