#include "ps/table_file.h"

#include <cstdio>
#include <filesystem>
#include <map>

#include "flotilla/common/checksum.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "ps/byte_io.h"

namespace flotilla::ps {
namespace {

constexpr std::string_view kMagic = "FLPSTBL1";
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8;

std::string Sanitize(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

}  // namespace

std::string TableFileName(const std::string& dir, const std::string& table, int server_index,
                          int num_servers) {
  return StrCat(dir, "/", Sanitize(table), ".server", server_index, "-of-", num_servers, ".tbl");
}

std::vector<std::string> SavedTableFiles(const std::string& dir, const std::string& table) {
  const std::string prefix = Sanitize(table) + ".server";
  std::map<int, int> count_of;  // server index → server count of the saving job
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    int index = 0, count = 0, used = 0;
    if (!file.starts_with(prefix) || !file.ends_with(".tbl")) continue;
    if (std::sscanf(file.c_str() + prefix.size(), "%d-of-%d.tbl%n", &index, &count, &used) != 2 ||
        prefix.size() + used != file.size()) {
      continue;
    }
    count_of[index] = count;
  }
  FLOTILLA_CHECK(!ec, NotFound, "cannot list '", dir, "': ", ec.message());
  FLOTILLA_CHECK(!count_of.empty(), NotFound, "no saved files of table '", table, "' in '", dir, "'");
  const int n = count_of.begin()->second;
  std::vector<std::string> files;
  for (int i = 0; i < n; ++i) {
    auto it = count_of.find(i);
    FLOTILLA_CHECK(it != count_of.end() && it->second == n, Corruption, "table '", table, "' in '",
                   dir, "': the files of a ", n, "-server save are incomplete or mixed (server ", i,
                   " of ", n, " is missing)");
    files.push_back(TableFileName(dir, table, i, n));
  }
  FLOTILLA_CHECK(count_of.size() == static_cast<size_t>(n), Corruption, "table '", table, "' in '",
                 dir, "': files of saves with different server counts");
  return files;
}

void WriteTableFile(const std::string& path, TableKind kind, std::string_view payload) {
  ByteWriter w;
  w.str().append(kMagic);
  w.Put<uint32_t>(kVersion);
  w.Put<uint32_t>(static_cast<uint32_t>(kind));
  w.Put<uint64_t>(payload.size());
  w.str().append(payload);
  w.Put<uint32_t>(Crc32c(w.str().data(), w.str().size()));
  WriteFileAtomic(path, w.str());
}

std::string ReadTableFile(const std::string& path, TableKind kind) {
  const std::string data = ReadFile(path);
  const std::string what = StrCat("table file '", path, "'");
  FLOTILLA_CHECK(data.size() >= kHeaderBytes + 4, Corruption, what, ": truncated (", data.size(),
                 " bytes, shorter than the header)");
  FLOTILLA_CHECK(std::string_view(data).substr(0, 8) == kMagic, Corruption, what,
                 ": bad magic, not a Flotilla table file");
  ByteReader r(std::string_view(data).substr(8), what);
  const uint32_t version = r.Get<uint32_t>();
  const uint32_t stored_kind = r.Get<uint32_t>();
  const uint64_t size = r.Get<uint64_t>();
  FLOTILLA_CHECK(version == kVersion, Corruption, what, ": version ", version, ", expected ", kVersion);
  FLOTILLA_CHECK(stored_kind == static_cast<uint32_t>(kind), Corruption, what, ": holds table kind ",
                 stored_kind, ", expected ", static_cast<uint32_t>(kind));
  FLOTILLA_CHECK(data.size() == kHeaderBytes + size + 4, Corruption, what, ": truncated or padded (",
                 data.size(), " bytes, header says ", kHeaderBytes + size + 4, ")");
  uint32_t stored_crc;
  std::memcpy(&stored_crc, data.data() + kHeaderBytes + size, 4);
  FLOTILLA_CHECK(Crc32c(data.data(), kHeaderBytes + size) == stored_crc, Corruption, what,
                 ": CRC32C mismatch, the file is corrupt");
  return data.substr(kHeaderBytes, size);
}

}  // namespace flotilla::ps
