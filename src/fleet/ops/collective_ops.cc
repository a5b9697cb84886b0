#include "fleet/ops/collective_ops.h"

#include <cstring>
#include <mutex>

#include "fleet/ops/op_families.h"
#include "flotilla/common/enforce.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla::fleet {

void RegisterCollectiveOps() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterAllOps();
    RegisterAllreduceOps();
    RegisterStepOps();
    RegisterSyncBatchNormOps();
  });
}

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int DecodeChar(char c) {
  const char* p = std::strchr(kAlphabet, c);
  FLOTILLA_CHECK(c != '\0' && p != nullptr, Corruption, "invalid base64 character '", c, "'");
  return static_cast<int>(p - kAlphabet);
}
}  // namespace

std::string Base64Encode(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) out.push_back(kAlphabet[(acc >> (bits -= 6)) & 63]);
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

std::string Base64Decode(const std::string& text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(DecodeChar(c));
    bits += 6;
    if (bits >= 8) out.push_back(static_cast<char>((acc >> (bits -= 8)) & 0xff));
  }
  return out;
}

}  // namespace flotilla::fleet
