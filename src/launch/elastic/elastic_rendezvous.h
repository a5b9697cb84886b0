// The elastic rendezvous (--elastic_server etcd://HOST:PORT[,...] --job_id J
// --np MIN[:MAX]): nodes come and go; each Join returns the next world.
//
// A node registers under a lease (node_registration.h) on its first Join.
// A Join then waits until the membership allows a world — at least MIN live
// nodes, and on the first Join MAX of them or the membership unchanged for
// the elastic timeout — and adopts the newest world that contains it and
// whose members are all alive. When there is none, it proposes one
// (AssignWorld: survivors keep their ranks where they can) with a
// transaction on the world key, so of concurrent proposals exactly one
// wins; everybody then adopts that one. Node 0 of the world hosts the
// world's TCP store (PADDLE_MASTER) and publishes its address under the
// generation. Collective mode only.
//
// Join throws DeadlineExceeded when fewer than MIN nodes are alive for the
// whole rendezvous timeout (naming those present), Unavailable naming the
// etcd addresses when etcd cannot be reached, AlreadyExists when another
// live launcher registered the same --host.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "flotilla/common/tls_files.h"
#include "flotilla/launch/options.h"
#include "launch/rendezvous.h"

namespace flotilla::launch {

struct ElasticOptions {
  std::string endpoints;       // --elastic_server
  std::string job_id;
  int min_nodes = 1;
  int max_nodes = 1;
  std::string host;            // this node's address
  bool force = false;          // clear the job's keys first
  std::chrono::seconds ttl{3};                        // --elastic_ttl
  std::chrono::milliseconds elastic_timeout{10000};   // --elastic_timeout: wait for MAX
  std::chrono::milliseconds rendezvous_timeout{120000};
  std::string token;           // the job secret the world's store demands
  TlsFiles tls;                // the job's TLS files (the world's store serves TLS)
};

// From the launcher's options. Throws InvalidArgument naming the option at
// fault (no --job_id, bad --np, parameter-server options).
ElasticOptions ElasticOptionsFrom(const LaunchOptions& options);

std::unique_ptr<Rendezvous> MakeElasticRendezvous(const LaunchOptions& options);

// `flotilla launch --elastic_server E --job_id J --scale N`: sets the running
// job's size to N nodes (Paddle's elastic "scale"): the launchers clamp it to
// their --np MIN:MAX; above the current world, waiting launchers join; below
// it, the nodes with the highest indices stop their processes and wait as
// standbys while the others go on in the smaller world. Survivors' launchers
// keep running either way. Returns the exit code (0). Throws NotFound when
// the job has no node in etcd, Unavailable when etcd cannot be reached.
int ScaleElasticJob(const LaunchOptions& options);

}  // namespace flotilla::launch
