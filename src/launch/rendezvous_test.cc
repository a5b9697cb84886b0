#include <gtest/gtest.h>

#include <string>

#include "flotilla/common/error.h"
#include "launch/rendezvous.h"
#include "launch/options_test_util.h"

namespace flotilla::launch {
namespace {

TEST(MasterRendezvous, OptionsAreChecked) {
  LaunchOptions o = WithCommand();
  o.master = "127.0.0.1:6123";
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "no --nnodes";
  o.nnodes = 2;
  EXPECT_NO_THROW(MakeMasterRendezvous(o));
  o.ips = "10.0.0.1,10.0.0.2";
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "--ips as well";
  o.ips = "127.0.0.1";
  o.node_rank = 2;
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "rank beyond nnodes";
  o.node_rank = -1;
  o.server_num = 2;
  EXPECT_NO_THROW(MakeMasterRendezvous(o)) << "ps job: each node runs its --server_num";
  o.servers = "10.0.0.1:6000";
  o.workers = "10.0.0.2";
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "--servers as well";
  o.servers = o.workers = "";
  o.server_num = 0;
  o.master = "127.0.0.1";
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "no port";
}

}  // namespace
}  // namespace flotilla::launch
