// The heterogeneous parameter-server split: cuts a training program into
// the part CPU trainers run (the sparse part: embedding lookups, what
// depends only on their outputs, the backward of that and its pushes) and
// the part heter workers run (the dense rest, its backward and the dense
// parameters' optimizer or pushes).
//
// One mini-batch runs as
//   trainer:  trainer_forward(feed)          → boundary values, kept values
//   heter:    heter(boundary + heter_feeds)  → boundary_grads (and the loss)
//   trainer:  trainer_backward(feed + kept + boundary_grads)
// and gives the same values as the whole program run once.
//
// The boundary is found automatically: a forward op is sparse when it is a
// sparse lookup (distributed_lookup_table, or lookup_table(_v2) with
// is_sparse / is_distributed) or when every input it reads is computed by
// sparse ops; the boundary is what sparse ops compute and dense ops read.
// `boundary` overrides it: the sparse forward is then exactly the ops those
// variables need. A backward op is sparse when it reads the sparse side
// (its values or a boundary gradient) and nothing the dense side computed.
// Optimizer ops go with the side that computes their gradient; ps_send is
// split into the sparse pushes (trainer) and the dense pushes (heter);
// ps_trainer_init runs on both sides, ps_recv on the heter side.
#pragma once

#include <string>
#include <vector>

#include "flotilla/framework/program.h"

namespace flotilla::fleet {

struct HeterSplit {
  Program trainer_forward;
  Program heter;
  Program trainer_backward;
  std::vector<std::string> boundary;        // trainer → heter, forward activations
  std::vector<std::string> heter_feeds;     // data variables the heter side reads
  std::vector<std::string> boundary_grads;  // heter → trainer: gradients of `boundary` (those that have one)
  std::vector<std::string> kept;            // trainer_forward values trainer_backward reads
};

// Splits `program` (a forward + backward + optimizer program, or a trainer
// program of the DistributeTranspiler in async mode). `boundary` (may be
// empty: automatic) lists the variables that cross from the sparse to the
// dense side. Throws InvalidArgument naming the variable when the dense side
// reads a sparse value outside the boundary (or the other way round), when
// a boundary variable is not computed by the forward pass or when the
// program has no sparse lookup; Unimplemented for sync or GEO PS programs
// (ps_barrier, ps_geo_step).
HeterSplit SplitHeterProgram(const Program& program, const std::vector<std::string>& boundary = {});

}  // namespace flotilla::fleet
