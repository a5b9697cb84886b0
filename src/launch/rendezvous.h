// Rendezvous: how the launchers of one job meet and agree on the world.
//
// A Rendezvous decides the nodes of the job and this node's index, lets the
// launcher plan this node's processes in that layout (NodePlanner: build the
// NodePlan, reserve ports), exchanges the plans, and returns the job's
// ClusterSpec with a JobChannel through which the nodes' launchers keep in
// touch while the processes run (who succeeded, who aborted).
//
// Two implementations: the static rendezvous (the layout is fixed by --ips
// or --servers/--workers) and the master rendezvous (--master HOST:PORT
// --nnodes N: nodes are numbered as they arrive). An elastic rendezvous
// (etcd, --np MIN:MAX) implements the same two interfaces, and the launcher's
// loop runs Join → supervise → Join again with the new world.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flotilla/launch/options.h"
#include "launch/cluster_spec.h"
#include "launch/node_plan.h"

namespace flotilla::launch {

// One node's reason for stopping the job, shown on every other node.
struct AbortNotice {
  int node = 0;
  int exit_code = 1;
  std::string message;
};

// Talks to the other nodes' launchers during a run. Every method is
// thread-safe and returns quickly: implementations that need the network do
// it on their own thread and report what they last saw.
class JobChannel {
 public:
  virtual ~JobChannel() = default;
  // One of this node's trainers exited 0.
  virtual void TrainerSucceeded() = 0;
  // Trainers that exited 0 in the whole job, as last seen.
  virtual int TrainersSucceeded() = 0;
  // This node stops the job; tells the others.
  virtual void Abort(const AbortNotice& notice) = 0;
  // Another node's abort (or the loss of the store), once seen.
  virtual std::optional<AbortNotice> PeerAbort() = 0;
  // This node's processes are gone. Node 0 keeps the store up until every
  // node has finished (bounded wait) because their processes may still use it.
  virtual void Finish() = 0;
  // Called once the processes are gone (before Finish) with the run's exit
  // code: true when the job goes on in a new world, so the launcher joins
  // the rendezvous again (an elastic job whose membership changed). May
  // block a few seconds to learn whether a failure came from a lost node.
  virtual bool Restart(int exit_code) {
    (void)exit_code;
    return false;
  }
};

struct World {
  ClusterSpec spec;
  std::unique_ptr<JobChannel> channel;
};

// Plans this node's processes once the layout is known; reserves their
// ports (the reservations must outlive the run: the planner keeps them).
using NodePlanner = std::function<NodePlan(const NodeLayout& layout)>;

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  // Blocks until every node has joined; returns the world. Throws
  // DeadlineExceeded naming the nodes that did not come, Unavailable naming
  // the store address it could not reach, InvalidArgument when the nodes'
  // plans disagree (different process counts).
  virtual World Join(const NodePlanner& plan_node) = 0;
};

// The fixed-size rendezvous: node 0 of the layout hosts a TCP store (the
// job's PADDLE_MASTER) for the whole run; every node publishes its processes
// there and waits for all the others.
std::unique_ptr<Rendezvous> MakeStaticRendezvous(const LaunchOptions& options);

// --master HOST:PORT --nnodes N (collective jobs, no --ips): the node whose
// address is HOST hosts the store at PORT and is node 0; the others are
// numbered by --rank or in the order they arrive, and publish their address
// (--host, else the local address that routes to HOST).
std::unique_ptr<Rendezvous> MakeMasterRendezvous(const LaunchOptions& options);

// MakeMasterRendezvous when --master is given, else MakeStaticRendezvous.
std::unique_ptr<Rendezvous> MakeRendezvous(const LaunchOptions& options);

// Assembles the world from every node's processes (index = node). Checks
// that ranks and server ids form 0..N-1 without gaps or duplicates and, in
// collective mode, that every node runs the same number of processes.
// Throws InvalidArgument naming the nodes that disagree.
ClusterSpec MergeNodePlans(const NodePlan& self, const std::vector<std::vector<ProcessSpec>>& nodes);

// JSON round trip of one node's process list (what nodes exchange).
std::string EncodeProcesses(const std::vector<ProcessSpec>& procs);
std::vector<ProcessSpec> DecodeProcesses(const std::string& json);

}  // namespace flotilla::launch
