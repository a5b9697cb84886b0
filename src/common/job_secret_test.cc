#include "flotilla/common/job_secret.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "flotilla/common/error.h"

namespace flotilla {
namespace {

// Sets the secret variables for one test and restores them afterwards.
class SecretEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {kJobSecretEnv, kJobSecretFileEnv, kInsecureEnv}) {
      if (const char* v = getenv(name)) saved_.emplace_back(name, v);
      unsetenv(name);
    }
    dir_ = std::filesystem::temp_directory_path() / ("job_secret_test." + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    for (const char* name : {kJobSecretEnv, kJobSecretFileEnv, kInsecureEnv}) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  std::string File(const std::string& content) {
    const std::string path = dir_ / "secret";
    std::filesystem::remove(path);
    WriteSecretFile(path, content);
    return path;
  }

  std::vector<std::pair<std::string, std::string>> saved_;
  std::filesystem::path dir_;
};

TEST_F(SecretEnv, GeneratedSecretsAre64RandomHexDigits) {
  const std::string a = GenerateJobSecret(), b = GenerateJobSecret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](char c) { return std::isxdigit(c) != 0; })) << a;
  EXPECT_NE(a, b);
}

TEST_F(SecretEnv, TheFileWinsOverTheVariableAndIsWrittenForItsOwnerOnly) {
  const std::string path = File("from-the-file-0123456789");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  setenv(kJobSecretEnv, "from-the-variable-0123456789", 1);
  EXPECT_EQ(JobSecretFromEnv(), "from-the-variable-0123456789");
  setenv(kJobSecretFileEnv, path.c_str(), 1);
  EXPECT_EQ(JobSecretFromEnv(), "from-the-file-0123456789");
  EXPECT_THROW(WriteSecretFile(path, "again-0123456789abcdef"), Unavailable) << "O_EXCL";
}

TEST_F(SecretEnv, MissingUnreadableOrShortSecretsAreNamed) {
  EXPECT_EQ(JobSecretFromEnv(), std::nullopt);
  auto message = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string missing = message([] { RequireJobSecret("the job's store at h:1"); });
  for (const char* part : {"the job's store at h:1", "FLOTILLA_JOB_SECRET_FILE", "FLOTILLA_JOB_SECRET",
                           "FLOTILLA_INSECURE=1"}) {
    EXPECT_NE(missing.find(part), std::string::npos) << part << " not in: " << missing;
  }
  setenv(kJobSecretFileEnv, (dir_ / "absent").c_str(), 1);
  const std::string unreadable = message([] { JobSecretFromEnv(); });
  EXPECT_NE(unreadable.find((dir_ / "absent").string()), std::string::npos) << unreadable;
  unsetenv(kJobSecretFileEnv);
  setenv(kJobSecretEnv, "short", 1);
  const std::string short_secret = message([] { JobSecretFromEnv(); });
  EXPECT_NE(short_secret.find("FLOTILLA_JOB_SECRET holds a job secret of 5 characters"),
            std::string::npos) << short_secret;
}

TEST_F(SecretEnv, InsecureIsAnExplicitChoice) {
  setenv(kInsecureEnv, "0", 1);
  EXPECT_THROW(RequireJobSecret("x"), InvalidArgument);
  setenv(kInsecureEnv, "1", 1);
  EXPECT_EQ(RequireJobSecret("x"), "");
  setenv(kJobSecretEnv, "a-secret-of-enough-length", 1);
  EXPECT_EQ(RequireJobSecret("x"), "a-secret-of-enough-length") << "a given secret is used";
}

TEST(SecretEquals, EqualOnlyForTheSameNonEmptyBytes) {
  EXPECT_TRUE(SecretEquals("abcdefgh", "abcdefgh"));
  EXPECT_FALSE(SecretEquals("abcdefgx", "abcdefgh"));
  EXPECT_FALSE(SecretEquals("abcdefg", "abcdefgh"));
  EXPECT_FALSE(SecretEquals(std::string_view("abcdefgh\0", 9), "abcdefgh"));
  EXPECT_FALSE(SecretEquals("", "abcdefgh"));
  EXPECT_FALSE(SecretEquals("", "")) << "no secret matches nothing";
}

// The fastest of `runs` calls of equal(presented, secret), in ns.
int64_t FastestNs(const std::function<bool(std::string_view, std::string_view)>& equal,
                  const std::string& presented, const std::string& secret, int runs) {
  int64_t best = INT64_MAX;
  volatile bool sink = false;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink ^ equal(presented, secret);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min<int64_t>(best, std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  }
  return best;
}

// Finding 10: the time to refuse a token must not tell how much of it was
// right. With 1 MiB tokens, a comparison that stops at the first difference
// (std::string_view ==, which the store and the servers used) refuses a
// token wrong in its first byte hundreds of times faster than one wrong in
// its last; SecretEquals takes the same time for both.
TEST(SecretEquals, TakesTheSameTimeWhereverTheFirstDifferenceIs) {
  const std::string secret(1 << 20, 'k');
  std::string early = secret, late = secret;
  early.front() = 'x';
  late.back() = 'x';
  auto ratio = [&](const std::function<bool(std::string_view, std::string_view)>& equal) {
    const double e = static_cast<double>(FastestNs(equal, early, secret, 15));
    const double l = static_cast<double>(FastestNs(equal, late, secret, 15));
    return e / l;
  };
  // std::string_view == as a loop: its memcmp, under AddressSanitizer, checks
  // every byte of both operands before comparing and so never exits early.
  const double early_exit = ratio([](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  });
  EXPECT_LT(early_exit, 0.1) << "the test cannot see an early exit";
  const double constant = ratio(SecretEquals);
  EXPECT_GT(constant, 0.5) << "SecretEquals refused a token wrong in its first byte " << 1 / constant
                           << " times faster than one wrong in its last";
}

// RFC 4231, test case 2.
TEST(DeriveToken, IsHmacSha256OfThePurposeKeyedByTheSecret) {
  EXPECT_EQ(DeriveToken("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(HmacSha256("Jefe", "what do ya want for nothing?").size(), 32u);
  const std::string secret = GenerateJobSecret();
  EXPECT_NE(DeriveToken(secret, "a"), DeriveToken(secret, "b"));
  EXPECT_EQ(DeriveToken(secret, "a").find(secret), std::string::npos);
  EXPECT_EQ(DeriveToken("", "a"), "") << "no secret, no token";
  EXPECT_EQ(RandomBytes(32).size(), 32u);
  EXPECT_NE(RandomBytes(32), RandomBytes(32));
}

// Issue 32, finding 8: a secret file other users can read was only warned
// about. It is refused (naming the file, its mode and the way out) unless
// FLOTILLA_INSECURE=1 accepts it.
TEST_F(SecretEnv, AFileOtherUsersCanReadIsRefusedUnlessInsecure) {
  const std::string path = File("world-readable-0123456789");
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  setenv(kJobSecretFileEnv, path.c_str(), 1);
  std::string refused = "(no error)";
  try {
    JobSecretFromEnv();
  } catch (const InvalidArgument& e) {
    refused = e.what();
  }
  for (const std::string& part : {path, std::string("mode 644"), std::string("chmod 600")}) {
    EXPECT_NE(refused.find(part), std::string::npos) << part << " not in: " << refused;
  }
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  EXPECT_THROW(JobSecretFromEnv(), InvalidArgument) << "group-readable";
  setenv(kInsecureEnv, "1", 1);
  EXPECT_EQ(JobSecretFromEnv(), "world-readable-0123456789");
  unsetenv(kInsecureEnv);
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  EXPECT_EQ(JobSecretFromEnv(), "world-readable-0123456789");
}

}  // namespace
}  // namespace flotilla
