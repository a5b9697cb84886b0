// The job secret: one random 256-bit value per job that the job's store, its
// parameter servers and its elastic store demand from every peer.
//
// `flotilla launch` makes one when it runs a job alone on this node (or takes
// the user's, which a job of several nodes needs) and hands it to its children
// as FLOTILLA_JOB_SECRET_FILE, a 0600 file — never on a command line, never in
// a log. Processes started without the launcher (a pserver started by hand,
// `srun -n 4 train`, a Kubernetes pod) read it from the same variables.
// Running open takes an explicit FLOTILLA_INSECURE=1 (`flotilla launch
// --insecure` sets it for its children), and warns. docs/security.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace flotilla {

inline constexpr char kJobSecretEnv[] = "FLOTILLA_JOB_SECRET";
inline constexpr char kJobSecretFileEnv[] = "FLOTILLA_JOB_SECRET_FILE";
inline constexpr char kInsecureEnv[] = "FLOTILLA_INSECURE";
// A secret shorter than this is refused: it could be guessed.
inline constexpr size_t kMinJobSecretChars = 16;

// 64 hex digits from getrandom(2). Throws Unavailable when the kernel has none.
std::string GenerateJobSecret();

// The secret named by FLOTILLA_JOB_SECRET_FILE (the file's first line) or
// else FLOTILLA_JOB_SECRET; nullopt when neither is set. Throws
// InvalidArgument naming the variable (and the file) when the file cannot be
// read, or the secret is shorter than kMinJobSecretChars.
std::optional<std::string> JobSecretFromEnv();

// True when FLOTILLA_INSECURE asks to run without a secret.
bool InsecureRequested();

// What `who` (e.g. "the job's store") authenticates with: the secret from the
// environment; "" when none is set and FLOTILLA_INSECURE=1 (a warning is
// logged once per process). Otherwise throws InvalidArgument naming `who`,
// FLOTILLA_JOB_SECRET_FILE, FLOTILLA_JOB_SECRET and FLOTILLA_INSECURE.
std::string RequireJobSecret(std::string_view who);

// Equality whose time depends only on the lengths, never on where the first
// difference is (for comparing presented tokens with the secret).
bool SecretEquals(std::string_view presented, std::string_view secret);

// `n` random bytes from getrandom(2). Throws Unavailable when the kernel has none.
std::string RandomBytes(size_t n);

// HMAC-SHA256 of `message` keyed by `secret`: 32 raw bytes.
std::string HmacSha256(std::string_view secret, std::string_view message);

// What a service demands in place of the secret itself: HMAC-SHA256 keyed by
// the secret over `purpose`, as 64 hex digits. Seeing one reveals neither the
// secret nor the token of another purpose. "" for an empty secret.
std::string DeriveToken(std::string_view secret, std::string_view purpose);

// Writes `secret` to `path` created with mode 0600 (O_EXCL: an existing file
// is an error). Throws Unavailable naming the path.
void WriteSecretFile(const std::string& path, const std::string& secret);

}  // namespace flotilla
