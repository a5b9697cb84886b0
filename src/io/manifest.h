// The MANIFEST of a checkpoint directory (format in docs/io.md):
//   flotilla-checkpoint 2
//   <name> \t <dtype> \t <dims, comma-separated> \t <file> \t <bytes> \t <crc32c hex>
//   ...
//   manifest-crc32c <crc32c hex of all lines above>
// Names and files are percent-encoded, so any variable name fits on a line.
// An entry's CRC32C covers its file's content without the file's own CRC
// trailer (it equals that trailer), so it binds the entry to that content.
// Format 1 (older releases) took the CRC over the whole file, trailer
// included: the same value for every file. Its entries are read with
// whole_file_crc set, and checked as before.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flotilla/io/checkpoint.h"

namespace flotilla::io::internal {

inline constexpr const char* kManifestName = "MANIFEST";
// A larger MANIFEST is refused before it is read (a line is ~100 bytes).
inline constexpr uint64_t kMaxManifestBytes = 64u << 20;

// The name of the file Flotilla puts in every directory it commits
// (CommitDirAtomic): clean-up removes only directories that carry it.
inline constexpr const char* kMarkerName = ".flotilla-checkpoint";

std::string FormatManifest(const std::vector<ManifestEntry>& entries);
// Throws Corruption naming `path` and the line when the text is damaged.
std::vector<ManifestEntry> ParseManifest(const std::string& text, const std::string& path);

// 8 lowercase hex digits: how CRCs are written in a MANIFEST and STATE.json.
std::string Hex32(uint32_t v);

// Percent-encodes everything but [A-Za-z0-9._@-]; a safe file name and field.
std::string EncodeName(const std::string& name);
// Inverse of EncodeName; false when `encoded` is malformed.
bool DecodeName(const std::string& encoded, std::string* name);

}  // namespace flotilla::io::internal
