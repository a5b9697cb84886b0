#include "manifest.h"

#include <cctype>
#include <cstdio>

#include "flotilla/common/checksum.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::io::internal {
namespace {

constexpr const char* kHeader = "flotilla-checkpoint 2";
constexpr const char* kHeaderV1 = "flotilla-checkpoint 1";
constexpr const char* kCrcPrefix = "manifest-crc32c ";

bool ParseHex32(const std::string& s, uint32_t* out) {
  if (s.size() != 8) return false;
  for (char c : s) if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  *out = static_cast<uint32_t>(std::stoul(s, nullptr, 16));
  return true;
}

std::string FormatDims(const Dims& dims) {
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(std::to_string(d));
  return Join(parts, ",");
}

std::string FormatEntry(const ManifestEntry& e) {
  return StrCat(EncodeName(e.name), '\t', DTypeName(e.dtype), '\t', FormatDims(e.dims), '\t',
                EncodeName(e.file), '\t', e.bytes, '\t', Hex32(e.crc32c), '\n');
}

// A file of the checkpoint itself: one plain name, never a path that could
// lead out of the directory ("..", "/etc/x", "a/../../x").
bool IsPlainFileName(const std::string& file) {
  return !file.empty() && file != "." && file != ".." && file.find('/') == std::string::npos &&
         file.find('\0') == std::string::npos;
}

// Parses one entry line; false when any field is malformed.
bool ParseEntry(const std::string& line, ManifestEntry* e) {
  std::vector<std::string> f = Split(line, '\t', /*skip_empty=*/false);
  if (f.size() != 6 || !DecodeName(f[0], &e->name) || !DecodeName(f[3], &e->file)) return false;
  if (!IsPlainFileName(e->file)) return false;
  try {
    e->dtype = ParseDType(f[1]);
    e->dims.clear();
    for (const auto& d : Split(f[2], ',')) e->dims.push_back(ParseInt(d, "dimension"));
    int64_t bytes = ParseInt(f[4], "byte size");
    if (bytes < 0) return false;
    e->bytes = static_cast<uint64_t>(bytes);
  } catch (const Error&) {
    return false;
  }
  return ParseHex32(f[5], &e->crc32c);
}

}  // namespace

std::string Hex32(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

std::string EncodeName(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '@' || c == '-') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

bool DecodeName(const std::string& encoded, std::string* name) {
  name->clear();
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] != '%') {
      *name += encoded[i];
      continue;
    }
    if (i + 2 >= encoded.size() || !std::isxdigit(static_cast<unsigned char>(encoded[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(encoded[i + 2]))) {
      return false;
    }
    *name += static_cast<char>(std::stoi(encoded.substr(i + 1, 2), nullptr, 16));
    i += 2;
  }
  return !name->empty();
}

std::string FormatManifest(const std::vector<ManifestEntry>& entries) {
  std::string text = std::string(kHeader) + "\n";
  for (const auto& e : entries) text += FormatEntry(e);
  return text + kCrcPrefix + Hex32(Crc32c(text.data(), text.size())) + "\n";
}

std::vector<ManifestEntry> ParseManifest(const std::string& text, const std::string& path) {
  size_t crc_at = text.rfind(kCrcPrefix);
  uint32_t stored = 0;
  bool ok = crc_at != std::string::npos && crc_at > 0 && text[crc_at - 1] == '\n' &&
            text.back() == '\n' &&
            ParseHex32(text.substr(crc_at + 16, text.size() - crc_at - 17), &stored);
  FLOTILLA_CHECK(ok, Corruption, "checkpoint manifest '", path,
                 "' is truncated: its closing checksum line is missing");
  FLOTILLA_CHECK(Crc32c(text.data(), crc_at) == stored, Corruption, "checkpoint manifest '", path,
                 "' fails its CRC32C checksum (corrupt)");
  std::vector<std::string> lines = Split(text.substr(0, crc_at), '\n');
  FLOTILLA_CHECK(!lines.empty() && (lines[0] == kHeader || lines[0] == kHeaderV1), Corruption,
                 "checkpoint manifest '", path, "' does not start with '", kHeader, "'");
  const bool v1 = lines[0] == kHeaderV1;
  std::vector<ManifestEntry> entries(lines.size() - 1);
  for (size_t i = 1; i < lines.size(); ++i) {
    FLOTILLA_CHECK(ParseEntry(lines[i], &entries[i - 1]), Corruption, "checkpoint manifest '",
                   path, "' line ", i + 1, " is malformed: '", lines[i], "'");
    entries[i - 1].whole_file_crc = v1;
  }
  return entries;
}

}  // namespace flotilla::io::internal
