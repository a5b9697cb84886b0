// What a Fleet keeps of its parameter-server job (fleet_ps.cc, fleet_heter.cc).
#pragma once

#include <memory>

#include "fleet/heter_pipeline.h"
#include "fleet/heter_split.h"
#include "flotilla/fleet/fleet.h"

namespace flotilla::fleet {

struct Fleet::PsJob {
  std::unique_ptr<DistributeTranspiler> transpiler;
  Program pserver_program;
  Program pserver_startup;
  bool server_ready = false;
  // Heterogeneous jobs (trainers and heter workers): the split programs,
  // strategy.heter_configs.pipeline_depth and a trainer's pipeline.
  std::unique_ptr<HeterSplit> heter;
  int pipeline_depth = 2;
  std::unique_ptr<HeterPipeline> pipeline;
};

}  // namespace flotilla::fleet
