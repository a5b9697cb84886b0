// The flags of the fit_a_line linear regression, shared by fit_a_line (one
// process) and dist_fit_a_line (parameter servers), so both train with the
// same defaults and are compared on equal terms.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace flotilla::examples {

struct FitALineFlags {
  int epochs = 30;
  int batch_size = 20;
  float lr = 0.001f;
  uint64_t seed = 1;
};

inline void AddFitALineFlags(CLI::App& app, FitALineFlags& f) {
  app.add_option("--epochs", f.epochs, "passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--batch_size", f.batch_size, "samples per step")->check(CLI::PositiveNumber);
  app.add_option("--lr", f.lr, "SGD learning rate")->check(CLI::PositiveNumber);
  app.add_option("--seed", f.seed, "random seed for initialisation and shuffling");
}

}  // namespace flotilla::examples
