// The elastic job's state in etcd and the pure rules over it: who is alive,
// which world (generation + ordered members) the nodes run, and how a new
// world keeps the survivors' ranks.
//
// Keys under /flotilla/<job>/ (values JSON unless noted):
//   nodes/<host>        a live node: its lease and processes (attached to the lease)
//   world               the current world: {"gen": G, "members": [{"host","lease"},...]}
//                       written only by a transaction on its mod_revision
//   gen/<G>/master      "host:port" of the world's TCP store (PADDLE_MASTER)
//   gen/<G>/abort       a node's failure in world G
//   gen/<G>/ok/<host>   the node's processes of world G all exited 0
//   done                the job finished (the prefix is removed right after)
//   target              the job's size set by `flotilla launch --scale N`
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launch/cluster_spec.h"

namespace flotilla::launch {

// Key names of one job.
struct ElasticKeys {
  explicit ElasticKeys(const std::string& job_id) : prefix("/flotilla/" + job_id + "/") {}
  std::string prefix;
  std::string nodes() const { return prefix + "nodes/"; }
  std::string node(const std::string& host) const { return nodes() + host; }
  std::string world() const { return prefix + "world"; }
  std::string gen(int64_t g) const { return prefix + "gen/" + std::to_string(g) + "/"; }
  std::string master(int64_t g) const { return gen(g) + "master"; }
  std::string abort(int64_t g) const { return gen(g) + "abort"; }
  std::string oks(int64_t g) const { return gen(g) + "ok/"; }
  std::string ok(int64_t g, const std::string& host) const { return oks(g) + host; }
  // Members that stopped the job for good after a failure of world g.
  std::string stops(int64_t g) const { return gen(g) + "stopped/"; }
  std::string stopped(int64_t g, const std::string& host) const { return stops(g) + host; }
  std::string done() const { return prefix + "done"; }
  std::string target() const { return prefix + "target"; }
};

// One launcher incarnation: its host and lease (a restarted launcher on the
// same host has a new lease, so it is a new member).
struct MemberId {
  std::string host;
  int64_t lease = 0;
  bool operator==(const MemberId&) const = default;
};

struct Member {
  MemberId id;
  int64_t create_revision = 0;      // registration order
  std::vector<ProcessSpec> procs;   // its processes (ids local until a world is formed)
};

struct WorldRecord {
  int64_t gen = -1;
  std::vector<MemberId> members;  // index = node index
  int64_t mod_revision = 0;       // of the world key when read; 0 = absent
};

std::string EncodeMember(const Member& m);
// Throws Corruption naming the key when malformed.
Member DecodeMember(const std::string& key, const std::string& value, int64_t lease,
                    int64_t create_revision);
std::string EncodeWorld(const WorldRecord& w);
WorldRecord DecodeWorld(const std::string& value, int64_t mod_revision);

// The members of the next world: at most `max_nodes` of `alive` (ordered by
// registration). A survivor of `previous` keeps its index when that index
// still exists; the remaining places are filled, in order, by survivors that
// lost theirs and then by newcomers in registration order. Deterministic, so
// every node computes the same proposal.
std::vector<MemberId> AssignWorld(const std::vector<MemberId>& previous,
                                  const std::vector<Member>& alive, int max_nodes);

bool Contains(const std::vector<MemberId>& ids, const MemberId& id);
std::vector<std::string> Hosts(const std::vector<MemberId>& ids);

// --np "N" or "MIN:MAX". Throws InvalidArgument naming the text.
struct NodeRange {
  int min = 1;
  int max = 1;
};
NodeRange ParseNp(const std::string& np);

// The most nodes the next world may have: MAX, or the job's --scale target
// (the value of the target key, nullopt when unset) clamped to MIN..MAX.
// Throws Corruption naming the key when the target is not a number.
int WorldCap(const NodeRange& np, const std::optional<std::string>& target);

}  // namespace flotilla::launch
