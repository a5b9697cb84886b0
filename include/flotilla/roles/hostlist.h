// Slurm hostlists: the compact node lists Slurm hands a job
// (SLURM_JOB_NODELIST, SLURM_STEP_NODELIST), e.g.
//
//   node[01-04,07],gpu-a[1-2]  →  node01 node02 node03 node04 node07 gpu-a1 gpu-a2
//   rack[1-2]-n[1-2]           →  rack1-n1 rack1-n2 rack2-n1 rack2-n2
//
// Commas outside brackets separate hosts; a bracket holds a comma list of
// numbers and ranges LO-HI (LO ≤ HI). A bound written with leading zeros
// fixes the width of every number of its range ("01-10" → 01 … 10). Several
// bracket groups in one host expand to every combination, leftmost slowest.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace flotilla::roles {

// At most this many hosts come out of one list: a malformed or hostile
// list ("n[0-999999999]") fails before anything is allocated for it.
inline constexpr size_t kMaxHostlistHosts = 65536;

// The hosts of `list`, in order. Throws InvalidArgument naming the list and
// what is wrong: an unbalanced or nested bracket, an empty item, a bound
// that is not a number, LO > HI, or more than kMaxHostlistHosts hosts.
std::vector<std::string> ExpandHostlist(std::string_view list);

}  // namespace flotilla::roles
