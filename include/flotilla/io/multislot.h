// Paddle's MultiSlot text format and its parser.
//
// One line per record; for each slot, in the order the dataset's
// set_use_var gave them, the number of values then the values, separated by
// spaces or tabs:
//
//   slots ("words", int64), ("label", int64):   "3 1926 8 17 1 1"
//
// is a record whose "words" are {1926, 8, 17} and whose "label" is {1}.
// int64 slots hold integers (unsigned 64-bit feasigns above INT64_MAX keep
// their bits, as Paddle's uint64 feasigns do); float slots hold decimals.
//
// Parsed records are stored by column (SlotColumns): per slot, the values of
// all records packed one after another plus offsets, so record i's values
// of slot s are [offsets[i], offsets[i+1]) — the LoD of that slot.
//
// Malformed input throws Corruption naming the source, the line number and
// what was expected ("part-0:17: slot 2 'label': expected 1 value(s), the
// line ends after 0"); nothing is skipped silently except blank lines.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace flotilla::io {

enum class SlotType { kInt64, kFloat32 };

// "int64" / "float32"; SlotTypeFromString also takes Paddle's "uint64",
// "int64" and "float" and throws InvalidArgument on anything else.
const char* SlotTypeName(SlotType type);
SlotType SlotTypeFromString(const std::string& name);

struct SlotSpec {
  std::string name;
  SlotType type = SlotType::kInt64;
  // Empty: a sequence slot (any count per record, fed with offsets). Else a
  // dense slot fed as a tensor of this shape, -1 standing for the batch
  // size (Paddle's lod_level 0 variables, e.g. [-1, 13]).
  std::vector<int64_t> dense_shape;
};

// The values of one slot over many records.
struct SlotValues {
  std::vector<int64_t> int64s;    // the values of an int64 slot
  std::vector<float> floats;      // the values of a float slot
  std::vector<int64_t> offsets{0};  // size: records + 1
};

// Records stored by slot. Not thread-safe; move it between threads.
struct SlotColumns {
  std::vector<SlotSpec> specs;
  std::vector<SlotValues> slots;  // one per spec

  SlotColumns() = default;
  explicit SlotColumns(std::vector<SlotSpec> slot_specs);

  int64_t records() const { return slots.empty() ? 0 : int64_t(slots[0].offsets.size()) - 1; }
  // Values over all slots and records (Paddle counts these as feasigns).
  int64_t values() const;
  // Appends all records of `other` (same specs, else InvalidArgument).
  void Append(const SlotColumns& other);
  // A new SlotColumns holding records `order[0]`, `order[1]`, ... of this.
  SlotColumns Gather(const std::vector<int64_t>& order) const;
};

struct MultiSlotParserOptions {
  // Paddle refuses a slot with 0 values ("you need padding it in data
  // generator"); true accepts them as empty sequences.
  bool allow_empty_slots = false;
  // Refuses any larger count before allocating for it (a count can never
  // exceed the tokens left on the line either).
  int64_t max_values_per_slot = int64_t(1) << 24;
};

// Parses MultiSlot text into SlotColumns. Stateless between calls apart from
// its options: one parser may serve several threads at once.
class MultiSlotParser {
 public:
  // Throws InvalidArgument when `slots` is empty or names a slot twice.
  explicit MultiSlotParser(std::vector<SlotSpec> slots, MultiSlotParserOptions options = {});

  const std::vector<SlotSpec>& slots() const { return slots_; }

  // Parses one line (without its '\n') and appends the record to `out`
  // (whose specs must be slots()). On error throws Corruption
  // "<source>:<line_number>: ..." and leaves `out` unchanged.
  void ParseLine(std::string_view line, std::string_view source, int64_t line_number, SlotColumns* out) const;

  // Parses every line of `text`, the first being line `first_line`; returns
  // the number of lines consumed (blank lines included). A last line
  // without '\n' is parsed too.
  int64_t ParseText(std::string_view text, std::string_view source, int64_t first_line, SlotColumns* out) const;

  // Reads `fd` to its end (blocking) and parses it; `source` names it in
  // errors. Does not close `fd`. Returns the records appended. With
  // `on_chunk`, it is called with `out` after each chunk read was parsed
  // (every 1 MiB), and may take records out of it (streaming); the count
  // returned still includes them.
  using ChunkSink = std::function<void(SlotColumns*)>;
  int64_t ParseFd(int fd, std::string_view source, SlotColumns* out, const ChunkSink& on_chunk = {}) const;

 private:
  std::vector<SlotSpec> slots_;
  MultiSlotParserOptions options_;
};

}  // namespace flotilla::io
