// The message behind fleet::DistributedStrategy, for fleet's own code (its
// passes and the PS runtime read config groups whole). Private to fleet:
// other layers use DistributedStrategy's accessors.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <string_view>
#include <utility>

#include "fleet/distributed_strategy.pb.h"
#include "flotilla/fleet/distributed_strategy.h"

namespace flotilla::fleet {

const proto::DistributedStrategy& StrategyProto(const DistributedStrategy& s);
proto::DistributedStrategy& MutableStrategyProto(DistributedStrategy& s);

// The message holding the field `path` ("a_sync_configs.k_steps") names in
// `root`, and the field; an unset group reads as its defaults. Throws
// InvalidArgument naming `path` when no field has it.
std::pair<const google::protobuf::Message*, const google::protobuf::FieldDescriptor*> FieldAt(
    const proto::DistributedStrategy& root, std::string_view path);

}  // namespace flotilla::fleet
