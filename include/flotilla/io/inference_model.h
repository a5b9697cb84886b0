// Inference models: a program pruned to its prediction targets plus the
// parameters it reads, in one directory (Paddle's save_inference_model).
//
// Layout: "__model__" (the binary ProgramDesc), "__feed_fetch__" (text: one
// "feed <name>" or "fetch <name>" line each, in order) and the checkpoint
// files of the parameters (MANIFEST + tensor files, see checkpoint.h). The
// directory is written under a temporary name and renamed into place.
//
// With InferenceModelFiles naming a model or parameter file (Paddle's
// model_filename / params_filename), the layout is Paddle's instead: the
// model in `model_filename`, the parameters in Paddle's tensor format
// (paddle_tensors.h) — all in `params_filename`, sorted by name, or one file
// per variable named after it — each file written atomically into `dir`,
// whose other files are kept; no other file is written.
//
// Every saved model file carries its feed and fetch names after the
// ProgramDesc, as fields 101 (feed) and 102 (fetch) of the message (strings,
// in order), which Program::Parse ignores; so a model file alone, or its
// bytes, name their targets.
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

// What SaveInferenceModel saves of `main` (Paddle's normalize_program): a
// for-test clone pruned to what computes `fetch_names`, keeping the feed
// variables. Throws NotFound naming a feed or fetch variable not in `main`,
// InvalidArgument when fetch_names is empty.
Program NormalizeProgram(const Program& main, const std::vector<std::string>& feed_names,
                         const std::vector<std::string>& fetch_names);

struct InferenceModelFiles {
  std::string model_filename;   // empty: kModelFileName
  std::string params_filename;  // empty: one file per variable
  // false: the whole program, unpruned (fetch_names may be empty), in
  // "<model file>.main_program" with no feed/fetch file; it is not loadable
  // by LoadInferenceModel (as in Paddle).
  bool export_for_deployment = true;
  bool program_only = false;  // write no parameters

  bool paddle_layout() const {
    return !model_filename.empty() || !params_filename.empty() || !export_for_deployment || program_only;
  }
};

// The same, laid out as `files` says. Throws InvalidArgument for a file name
// with a directory part.
void SaveInferenceModel(const std::string& dir, const std::vector<std::string>& feed_names,
                        const std::vector<std::string>& fetch_names, const Executor& exe,
                        const Program& main, const Scope& scope, const InferenceModelFiles& files);

struct InferenceModel {
  Program program;
  std::vector<std::string> feed_names;
  std::vector<std::string> fetch_names;
};

// The model bytes SaveInferenceModel writes: NormalizeProgram's program
// serialised, with its feed and fetch names.
std::string SerializeInferenceProgram(const Program& main, const std::vector<std::string>& feed_names,
                                      const std::vector<std::string>& fetch_names);

// A model from memory: model bytes as SerializeInferenceProgram (or a saved
// model file) holds them, parameters as SerializePaddleVars holds the
// program's persistables (sorted by name). Throws Corruption naming `what`
// for bytes without fetch names or damaged parameters.
InferenceModel LoadInferenceModelFromMemory(const std::string& model, const std::string& params, Scope& scope);

// Loads the program and puts its parameters into `scope`. Throws NotFound
// when the directory or a file is missing, Corruption naming the file when one
// is damaged.
InferenceModel LoadInferenceModel(const std::string& dir, Scope& scope);
// Loads a model saved with `files` (the parameters: from params_filename,
// else Flotilla's MANIFEST when the directory has one, else one Paddle file
// per variable).
InferenceModel LoadInferenceModel(const std::string& dir, Scope& scope, const InferenceModelFiles& files);

}  // namespace flotilla::io
