// The fixed-size rendezvous (see rendezvous.h): the layout comes from the
// options, node 0 of it hosts the store at a known port.
#include "flotilla/common/enforce.h"
#include "launch/store_rendezvous.h"

namespace flotilla::launch {

namespace {

class StaticRendezvous : public StoreRendezvous {
 public:
  StaticRendezvous(const LaunchOptions& options, RunMode mode)
      : StoreRendezvous(options), layout_(StaticLayout(options, mode)) {}

  World Join(const NodePlanner& plan_node) override {
    const auto deadline = Clock::now() + timeout_;
    const NodePlan plan = plan_node(layout_);
    const std::string address = plan.node_index == 0
                                    ? HostStore(plan.master_host, plan.master_port)
                                    : StrCat(plan.master_host, ":", plan.master_port);
    if (plan.nodes.size() == 1) return SingleNode(plan, address);
    auto store = Connect(StrCat("node ", NodeNames(plan.nodes)[plan.node_index]), address,
                         timeout_);
    return Exchange(plan, address, std::move(store), deadline);
  }

 private:
  NodeLayout layout_;
};

}  // namespace

std::unique_ptr<Rendezvous> MakeStaticRendezvous(const LaunchOptions& options) {
  return std::make_unique<StaticRendezvous>(options, SelectRunMode(options));
}

}  // namespace flotilla::launch
