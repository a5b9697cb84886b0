// Paddle's tensor serialisation: the bytes of Paddle's per-variable files
// (fluid.io.save_params without a filename) and, concatenated in the order
// of the variable list, of its combined files (save_params(filename=...),
// save_inference_model(params_filename=...), `.pdiparams`).
//
// One tensor (all little-endian):
//   u32 version (0) | u64 lod_levels | per level: u64 bytes, u64 offsets[]
//   | u32 tensor version (0) | i32 desc bytes | TensorDesc protobuf
//   (field 1: data type, varint; field 2: dims, int64 varints)
//   | raw data, row-major
// Data types are Paddle's: 2 int32, 3 int64, 5 float32, 6 float64
// (Flotilla's DType values). Flotilla's tensors are dense: a tensor written
// with LoD levels loads without them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "flotilla/core/tensor.h"
#include "flotilla/framework/program.h"
#include "flotilla/framework/scope.h"

namespace flotilla::io {

// The bytes of `tensors`, one after the other. Throws InvalidArgument for an
// uninitialised tensor.
std::string EncodePaddleTensors(const std::vector<Tensor>& tensors);

// Exactly `count` tensors from `bytes`. Throws Corruption naming `what` when
// the bytes are truncated, hold trailing data or describe an impossible
// tensor; InvalidArgument naming the type for a data type Flotilla lacks.
std::vector<Tensor> DecodePaddleTensors(std::string_view bytes, size_t count, const std::string& what);

// The tensors of `names` (in that order) from `scope` as one Paddle combined
// blob; NotFound naming a variable that is absent or holds no tensor.
std::string SerializePaddleVars(const std::vector<std::string>& names, const Scope& scope);

// Reads a blob SerializePaddleVars (or Paddle) wrote for `names` into `scope`;
// the scope changes only when every tensor decoded. With `program`, each
// tensor's dtype and shape must fit the program's variable (InvalidArgument
// naming it).
void DeserializePaddleVars(std::string_view bytes, const std::vector<std::string>& names, Scope& scope,
                           const std::string& what, const Program* program = nullptr);

// The same through a file, written atomically; NotFound when the file is
// missing, Unavailable on I/O errors.
void SaveCombined(const std::string& path, const std::vector<std::string>& names, const Scope& scope);
void LoadCombined(const std::string& path, const std::vector<std::string>& names, Scope& scope,
                  const Program* program = nullptr);

// One file per variable, named after it, in `dir` (Paddle's save_vars
// without a filename); each written atomically, other files kept.
void SaveVarFiles(const std::string& dir, const std::vector<std::string>& names, const Scope& scope);

// Reads `names` from `dir`: Flotilla's checkpoint when it has a MANIFEST,
// else Paddle's one file per variable. With `program`, each tensor's dtype
// and shape must fit the program's variable (InvalidArgument naming it).
// The scope changes only when every variable was read.
void LoadVarsFromDir(const std::string& dir, const std::vector<std::string>& names, Scope& scope,
                     const Program* program = nullptr);

}  // namespace flotilla::io
