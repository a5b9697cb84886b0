// Table files: one per table per server, written by Save and read by Load.
//
//   "FLPSTBL1" | u32 version | u32 kind | u64 payload bytes | payload | u32 CRC32C
//
// The CRC covers everything before it. Files are written to a temporary name,
// fsync'ed and renamed (WriteFileAtomic), so a crash never leaves a partial
// file under the final name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace flotilla::ps {

// kSparseSsd: the header of an ssd table's save, whose rows are in the
// database directory "<file>.db" beside it.
enum class TableKind : uint32_t { kDense = 1, kSparse = 2, kSparseSsd = 3 };

// "<dir>/<table>.server<i>-of-<n>.tbl", with characters outside
// [A-Za-z0-9._-] in the table name replaced by '_'.
std::string TableFileName(const std::string& dir, const std::string& table, int server_index,
                          int num_servers);

// The files of `table` in `dir` saved by a job of any server count, in
// server order. Throws NotFound when there are none and Corruption when
// the set mixes server counts or misses a server's file.
std::vector<std::string> SavedTableFiles(const std::string& dir, const std::string& table);

// Throws Unavailable naming the path when the file cannot be written.
void WriteTableFile(const std::string& path, TableKind kind, std::string_view payload);
// Returns the payload. Throws NotFound when the file is missing and
// Corruption naming the file when the magic, kind, length or CRC is wrong.
std::string ReadTableFile(const std::string& path, TableKind kind);

}  // namespace flotilla::ps
