// train_with_fleet as real processes: under `flotilla launch` (the
// environment contract and the launcher's TCP store) and under `mpirun`
// (MPISymetricRoleMaker; skipped where OpenMPI is absent).
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "launch_test_util.h"

namespace flotilla::fleet {
namespace {

using launch_test::Child;
using launch_test::TempDir;

constexpr auto kTimeout = std::chrono::seconds(120);

std::string TrainBin() { return launch_test::Bin("train_with_fleet"); }

std::string FindOnPath(const std::string& name) {
  std::string path = getenv("PATH") ? getenv("PATH") : "";
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t end = path.find(':', pos);
    std::string dir = path.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (!dir.empty() && access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return "";
}

TEST(FleetProcesses, TrainsUnderFlotillaLaunch) {
  TempDir tmp;
  Child job({launch_test::FlotillaBin(), "launch", "--devices", "0,1", "--log_dir", tmp / "log",
             TrainBin(), "--steps", "8", "--hidden", "64", "--model_dir", tmp / "model"},
            tmp.path());
  ASSERT_EQ(job.WaitCode(kTimeout), 0) << job.Stdout() << job.Stderr();
  nlohmann::json result = launch_test::LastJsonLine(job.Stdout());
  ASSERT_FALSE(result.empty()) << job.Stdout();
  EXPECT_EQ(result["ranks"], 2);
  EXPECT_GT(result["samples_per_sec"].get<double>(), 0.0);
  EXPECT_TRUE(std::isfinite(result["loss"].get<double>()));
  EXPECT_TRUE(std::filesystem::exists(tmp / "model/MANIFEST")) << "rank 0 saves the persistables";
}

TEST(FleetProcesses, TrainsUnderMpirunWithMPISymetricRoleMaker) {
  std::string mpirun = FindOnPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun (OpenMPI) is not installed; skipping the MPI test";
  TempDir tmp;
  std::vector<std::string> argv = {mpirun, "-np", "2", "--oversubscribe"};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  std::vector<std::string> rest = {"-x", "FLOTILLA_STORE=file:" + (tmp / "store"), TrainBin(),
                                   "--role", "mpi", "--steps", "8", "--hidden", "64"};
  argv.insert(argv.end(), rest.begin(), rest.end());
  Child job(argv, tmp.path());
  ASSERT_EQ(job.WaitCode(kTimeout), 0) << job.Stdout() << job.Stderr();
  nlohmann::json result = launch_test::LastJsonLine(job.Stdout());
  ASSERT_FALSE(result.empty()) << job.Stdout();
  EXPECT_EQ(result["ranks"], 2);
}

}  // namespace
}  // namespace flotilla::fleet
