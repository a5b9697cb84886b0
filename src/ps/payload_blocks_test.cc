#include "ps/payload_blocks.h"

#include <gtest/gtest.h>

#include <cstring>

namespace flotilla::ps {
namespace {

TEST(PayloadSlice, PlacesTheGivenOffsetOnACacheLine) {
  for (size_t bytes : {size_t{100}, size_t{300} << 10}) {
    for (size_t line_at : {size_t{0}, size_t{13}, size_t{64}, size_t{77}}) {
      PayloadSlice s = NewPayloadSlice(bytes, line_at);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data + line_at) % 64, 0u) << bytes << " " << line_at;
      EXPECT_EQ(GRPC_SLICE_START_PTR(s.slice), s.data);
      EXPECT_EQ(GRPC_SLICE_LENGTH(s.slice), bytes);
      std::memset(s.data, 1, bytes);  // all of it writable
      grpc_slice_unref(s.slice);
    }
  }
}

TEST(PayloadSlice, LargeBlocksAreReusedOnceReleased) {
  PayloadSlice first = NewPayloadSlice(320 << 10);
  uint8_t* const memory = first.data;
  PayloadSlice held = NewPayloadSlice(320 << 10);  // while the first is held: another block
  EXPECT_NE(held.data, memory);
  grpc_slice_unref(first.slice);
  PayloadSlice again = NewPayloadSlice(320 << 10);  // the same block (the smallest that fits)
  EXPECT_EQ(again.data, memory);
  grpc_slice_unref(again.slice);
  PayloadSlice tiny = NewPayloadSlice(20 << 10);  // far smaller: not a block 16x its size
  EXPECT_NE(tiny.data, memory);
  grpc_slice_unref(tiny.slice);
  grpc_slice_unref(held.slice);
}

}  // namespace
}  // namespace flotilla::ps
