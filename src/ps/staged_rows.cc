#include "ps/staged_rows.h"

#include "flotilla/common/enforce.h"
#include "flotilla/core/row_copy.h"

namespace flotilla::ps {

namespace {

// The sink filling `t`'s rows as the servers' answers arrive.
PsClient::RowSink Fill(StagedRows::Table& t) {
  return [&t](std::span<const uint32_t> positions, const float* rows, int64_t dim) {
    if (t.dim < 0) {
      t.dim = dim;
      t.rows.resize(t.keys.size() * dim);
    }
    FLOTILLA_ENFORCE_EQ(dim, t.dim, "sparse table '", t.name, "' dim differs across servers");
    for (size_t j = 0; j < positions.size(); ++j) CopyRow(t.rows.data() + positions[j] * dim, rows + j * dim, dim);
  };
}

}  // namespace

std::future<StagedRows> PullAhead(std::shared_ptr<PsClient> client, StagedRows staged) {
  return std::async(std::launch::async, [client = std::move(client), staged = std::move(staged)]() mutable {
    std::vector<PsClient::TablePull> pulls;
    for (StagedRows::Table& t : staged.tables) {
      t.index.Reserve(t.keys.size());
      for (size_t i = 0; i < t.keys.size(); ++i) t.index.FindOrInsert(t.keys[i], static_cast<uint32_t>(i));
      pulls.push_back({t.name, t.keys, Fill(t)});
    }
    client->PullSparseTables(pulls);
    return std::move(staged);
  });
}

}  // namespace flotilla::ps
