// Inference models: a program pruned to its prediction targets plus the
// parameters it reads, in one directory (Paddle's save_inference_model).
//
// Layout: "__model__" (the binary ProgramDesc), "__feed_fetch__" (text: one
// "feed <name>" or "fetch <name>" line each, in order) and the checkpoint
// files of the parameters (MANIFEST + tensor files, see checkpoint.h). The
// directory is written under a temporary name and renamed into place.
#pragma once

#include <string>
#include <vector>

#include "flotilla/framework/executor.h"
#include "flotilla/framework/program.h"
#include "flotilla/framework/scope.h"

namespace flotilla::io {

inline constexpr const char* kModelFileName = "__model__";
inline constexpr const char* kFeedFetchFileName = "__feed_fetch__";

// Prunes `main` to what computes `fetch_names` (a for-test clone: no backward
// or optimizer ops, is_test set) and saves it with its persistable variables
// from `scope`. Throws NotFound naming a feed or fetch variable that is not in
// `main`, or a parameter missing from `scope`; InvalidArgument when
// fetch_names is empty. The executor is not used.
void SaveInferenceModel(const std::string& dir, const std::vector<std::string>& feed_names,
                        const std::vector<std::string>& fetch_names, const Executor& exe,
                        const Program& main, const Scope& scope);

struct InferenceModel {
  Program program;
  std::vector<std::string> feed_names;
  std::vector<std::string> fetch_names;
};

// Loads the program and puts its parameters into `scope`. Throws NotFound
// when the directory or a file is missing, Corruption naming the file when one
// is damaged.
InferenceModel LoadInferenceModel(const std::string& dir, Scope& scope);

}  // namespace flotilla::io
