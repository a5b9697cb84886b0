// Fuzzes the parameter server's table files and the table images inside
// them, as Load reads them: ReadTableFile, then Deserialize (or the
// resharding/reslicing variants for saves of another server count) into the
// tables of fuzz/ps_tables.h.
//
// Input: a mode byte, then bytes. Mode bits 0-1 choose the table: dense "w",
// dense "m", sparse "emb", sparse "ctr". Bit 2 clear: the bytes are an image,
// written as a table file by WriteTableFile (header and CRC right); set: the
// bytes are the whole file. Bit 3: load as two servers' saves.
#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/ps_tables.h"
#include "fuzz/scratch_dir.h"
#include "ps/table_file.h"

namespace flotilla::fuzz {
namespace {

// The file every input is written to.
const std::string& FilePath() {
  static const std::string path = ScratchDir() + "/t.server0-of-1.tbl";
  return path;
}

void LoadDense(const std::string& name, const std::string& image, bool two_servers) {
  ps::DenseTable table(FuzzDenseConfig(name), 0, 1);
  if (two_servers) {
    const std::string images[] = {image, image};
    table.DeserializeResliced(images, "fuzz image");
  } else {
    table.Deserialize(image, "fuzz image");
  }
  for (const auto& b : table.blocks()) {
    std::vector<float> out(b.length);
    table.Pull(b.id, out);
  }
}

void LoadSparse(const std::string& name, const std::string& image, bool two_servers) {
  ps::SparseTable table(FuzzSparseConfig(name));
  if (two_servers) {
    const std::string images[] = {image, image};
    table.DeserializeResharded(images, [](int64_t key) { return key % 2 == 0; }, "fuzz image");
  } else {
    table.Deserialize(image, "fuzz image");
  }
  // An image that loads must save to one that loads again.
  ps::SparseTable again(FuzzSparseConfig(name));
  again.Deserialize(table.Serialize(), "reserialised image");
}

}  // namespace
}  // namespace flotilla::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flotilla::fuzz;
  using flotilla::ps::TableKind;
  FuzzInput in(data, size);
  const uint8_t mode = in.U8();
  const bool dense = (mode & 3) < 2;
  const std::string name = dense ? kFuzzDenseTables[mode & 1] : kFuzzSparseTables[mode & 1];
  const TableKind kind = dense ? TableKind::kDense : TableKind::kSparse;
  if (mode & 4) {
    flotilla::WriteFileAtomic(FilePath(), in.Rest());
  } else {
    flotilla::ps::WriteTableFile(FilePath(), kind, in.Rest());
  }
  try {
    const std::string image = flotilla::ps::ReadTableFile(FilePath(), kind);
    if (dense) {
      LoadDense(name, image, mode & 8);
    } else {
      LoadSparse(name, image, mode & 8);
    }
  } catch (const flotilla::Error&) {
    // refused with a named error
  }
  return 0;
}
