// The tables of a transpiled job as they travel in op attributes: JSON text
// (attributes must be plain values), and their translation into the core's
// table configs.
#pragma once

#include <string>
#include <vector>

#include "flotilla/fleet/distribute_transpiler.h"
#include "flotilla/framework/desc.h"
#include "flotilla/ps/server.h"

namespace flotilla::fleet {

inline bool IsLookup(const OpDesc& op) {
  return op.type == "lookup_table" || op.type == "lookup_table_v2";
}

std::string TablesToJson(const std::vector<PsTableInfo>& tables);
// Throws Corruption naming `what` for text that is not a table list.
std::vector<PsTableInfo> TablesFromJson(const std::string& text, const std::string& what);

// Elements per row: the product of dims[1:] (1 for a 1-D parameter).
int64_t RowWidth(const Dims& dims);
int64_t Numel(const Dims& dims);

// The servers' update rule for the table's optimizer (GEO: the dense rule is
// kept for completeness; deltas are added by PushDelta).
ps::UpdateRuleConfig RuleConfig(const PsTableInfo& table);
ps::InitializerConfig InitConfig(const PsTableInfo& table);

// The directory under which a server keeps its ssd tables' databases:
// <ssd base>/server<i>-<pid>. Directories of that form left by processes
// that no longer run (a killed server) are removed by RemoveStaleSsdDirs.
std::string SsdServerDir(const SparseTableSettings& settings, int server_index);
void RemoveStaleSsdDirs(const SparseTableSettings& settings);

std::string SparseSettingsToJson(const SparseTableSettings& settings);
SparseTableSettings SparseSettingsFromJson(const std::string& text, const std::string& what);

// Adds the tables server `server_index` holds (every sparse table; every
// dense one, the table holding only the blocks placed there). Sparse
// tables follow `sparse`: an ssd table's database goes to
// SsdServerDir(sparse, server index)/<table>.
void AddTables(ps::PsServer& server, const std::vector<PsTableInfo>& tables,
               int64_t min_block_size, const SparseTableSettings& sparse = {});

}  // namespace flotilla::fleet
