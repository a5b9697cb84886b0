#include "flotilla/io/multislot.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "flotilla/common/error.h"

namespace flotilla::io {
namespace {

std::vector<SlotSpec> WordsLabel() { return {{"words", SlotType::kInt64}, {"label", SlotType::kFloat32}}; }

// The Corruption message of parsing `text`, or "" when it parses.
std::string ParseError(const std::string& text, MultiSlotParserOptions options = {}) {
  MultiSlotParser parser(WordsLabel(), options);
  SlotColumns out(parser.slots());
  try {
    parser.ParseText(text, "part-0", 1, &out);
  } catch (const Corruption& e) {
    return e.what();
  }
  return "";
}

TEST(MultiSlotParser, PacksValuesAndOffsetsPerSlot) {
  MultiSlotParser parser(WordsLabel());
  SlotColumns out(parser.slots());
  EXPECT_EQ(parser.ParseText("3 1926 8 17 1 1\n\n1 -5\t2 0.5 2.5e1\r\n1 18446744073709551615 1 -1", "f", 1, &out),
            4);
  ASSERT_EQ(out.records(), 3);
  EXPECT_EQ(out.values(), 9);
  EXPECT_EQ(out.slots[0].int64s, (std::vector<int64_t>{1926, 8, 17, -5, -1}));
  EXPECT_EQ(out.slots[0].offsets, (std::vector<int64_t>{0, 3, 4, 5}));
  EXPECT_EQ(out.slots[1].floats, (std::vector<float>{1, 0.5f, 25, -1}));
  EXPECT_EQ(out.slots[1].offsets, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_TRUE(out.slots[1].int64s.empty());
}

TEST(MultiSlotParser, EmptySlotsOnlyWhenAllowed) {
  EXPECT_NE(ParseError("0 1 1\n").find("part-0:1: slot 0 'words' (int64) has 0 values; pad it"), std::string::npos);
  MultiSlotParserOptions allow;
  allow.allow_empty_slots = true;
  MultiSlotParser parser(WordsLabel(), allow);
  SlotColumns out(parser.slots());
  parser.ParseText("0 1 1\n2 4 5 0\n", "f", 1, &out);
  EXPECT_EQ(out.slots[0].offsets, (std::vector<int64_t>{0, 0, 2}));
  EXPECT_EQ(out.slots[1].offsets, (std::vector<int64_t>{0, 1, 1}));
}

struct BadLine {
  const char* text;
  const char* message;
};

class MultiSlotParserErrors : public ::testing::TestWithParam<BadLine> {};

TEST_P(MultiSlotParserErrors, NameFileLineAndWhatWasExpected) {
  const std::string error = ParseError(GetParam().text);
  EXPECT_NE(error.find(GetParam().message), std::string::npos) << "got: " << error;
}

INSTANTIATE_TEST_SUITE_P(
    Grid, MultiSlotParserErrors,
    ::testing::Values(
        BadLine{"1 1 1 1\nx 1 1 1\n", "part-0:2: expected the value count of slot 0 'words' (int64), found 'x'"},
        BadLine{"-1 1 1\n", "part-0:1: expected the value count of slot 0 'words' (int64), found '-1'"},
        BadLine{"1 1 1 1\n\n2 1", "part-0:3: slot 0 'words' (int64): count 2 is more than the rest"},
        BadLine{"2 1 2\n", "part-0:1: expected the value count of slot 1 'label' (float32), the line ends"},
        BadLine{"3 1 2 3 5 0.5", "part-0:1: slot 1 'label' (float32): count 5 is more than the rest"},
        BadLine{"3 1 2 3 2 0.5", "part-0:1: slot 1 'label' (float32): expected 2 value(s), the line ends after 1"},
        BadLine{"1 1.5 1 1\n", "part-0:1: slot 0 'words' (int64): value 0 of 1: expected an integer, found '1.5'"},
        BadLine{"1 12a 1 1\n", "found '12a'"},
        BadLine{"1 99999999999999999999 1 1\n", "expected an integer, found '99999999999999999999'"},
        BadLine{"1 1 1 abc\n", "slot 1 'label' (float32): value 0 of 1: expected a number, found 'abc'"},
        BadLine{"1 1 1 1 7\n", "part-0:1: expected the end of the line after 2 slot(s), found '7'"},
        BadLine{"1 1 1 1 1 2\n", "expected the end of the line after 2 slot(s), found '1'"},
        BadLine{"99999999999 1 1 1\n", "count 99999999999 exceeds the limit of 16777216 values per slot"},
        BadLine{"99999999999999999999999 1\n", "expected the value count of slot 0 'words' (int64), found"}));

TEST(MultiSlotParser, HugeCountsAreRefusedBeforeAllocating) {
  MultiSlotParserOptions unlimited;
  unlimited.max_values_per_slot = INT64_MAX;
  // Would need 64 GiB if believed; the line holds 3 characters after it.
  EXPECT_NE(ParseError("8000000000 1 1\n", unlimited).find("is more than the rest of the line holds (4 characters)"),
            std::string::npos);
}

TEST(MultiSlotParser, FailedLineLeavesNoPartialRecord) {
  MultiSlotParser parser(WordsLabel());
  SlotColumns out(parser.slots());
  parser.ParseLine("2 1 2 1 0.5", "f", 1, &out);
  EXPECT_THROW(parser.ParseLine("3 7 8 9 1 x", "f", 2, &out), Corruption);
  EXPECT_EQ(out.records(), 1);
  EXPECT_EQ(out.slots[0].int64s, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(out.slots[0].offsets, (std::vector<int64_t>{0, 2}));
  EXPECT_TRUE(out.slots[1].floats.size() == 1 && out.slots[1].offsets.size() == 2);
}

TEST(MultiSlotParser, RefusesNoSlotsAndDuplicateNames) {
  EXPECT_THROW(MultiSlotParser({}), InvalidArgument);
  EXPECT_THROW(MultiSlotParser({{"a", SlotType::kInt64}, {"a", SlotType::kFloat32}}), InvalidArgument);
  EXPECT_EQ(SlotTypeFromString("uint64"), SlotType::kInt64);
  EXPECT_EQ(SlotTypeFromString("float"), SlotType::kFloat32);
  EXPECT_THROW(SlotTypeFromString("string"), InvalidArgument);
}

// Lines split across read() chunks keep their numbers.
TEST(MultiSlotParser, ParseFdCountsLinesAcrossChunks) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "3 " + std::to_string(i) + " 2 3 1 0.25\n";
  text += "1 1 1 bad\n";
  std::thread writer([&] {
    for (size_t at = 0; at < text.size(); at += 777) {
      const size_t n = std::min<size_t>(777, text.size() - at);
      ASSERT_EQ(::write(fds[1], text.data() + at, n), ssize_t(n));
    }
    ::close(fds[1]);
  });
  MultiSlotParser parser(WordsLabel());
  SlotColumns out(parser.slots());
  try {
    parser.ParseFd(fds[0], "pipe", &out);
    ADD_FAILURE() << "the bad last line parsed";
  } catch (const Corruption& e) {
    EXPECT_NE(std::string(e.what()).find("pipe:5001: slot 1 'label'"), std::string::npos) << e.what();
  }
  writer.join();
  ::close(fds[0]);
  EXPECT_EQ(out.records(), 5000);
  EXPECT_EQ(out.slots[0].int64s[3 * 4999], 4999);
}

TEST(SlotColumns, GatherAndAppend) {
  MultiSlotParser parser(WordsLabel());
  SlotColumns out(parser.slots());
  parser.ParseText("1 10 1 1\n2 20 21 1 2\n3 30 31 32 1 3\n", "f", 1, &out);
  SlotColumns picked = out.Gather({2, 0});
  EXPECT_EQ(picked.slots[0].int64s, (std::vector<int64_t>{30, 31, 32, 10}));
  EXPECT_EQ(picked.slots[0].offsets, (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ(picked.slots[1].floats, (std::vector<float>{3, 1}));
  picked.Append(out.Gather({1}));
  EXPECT_EQ(picked.slots[0].offsets, (std::vector<int64_t>{0, 3, 4, 6}));
  EXPECT_EQ(picked.records(), 3);
  EXPECT_THROW(out.Gather({3}), InvalidArgument);
}

}  // namespace
}  // namespace flotilla::io
