#include "flotilla/core/thread_pool.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>

namespace flotilla {
namespace {

// Async hands back what the closure returns, from a worker thread, in
// FIFO order per worker, and carries its exception to the future.
TEST(ThreadPool, AsyncReturnsTheResultOrTheExceptionOfTheClosure) {
  ThreadPool pool(1);
  const std::thread::id caller = std::this_thread::get_id();
  auto first = pool.Async([] { return std::string("rows"); });
  auto where = pool.Async([] { return std::this_thread::get_id(); });
  auto failed = pool.Async([]() -> int { throw std::runtime_error("server 1 is gone"); });
  EXPECT_EQ(first.get(), "rows");
  EXPECT_NE(where.get(), caller);
  try {
    failed.get();
    ADD_FAILURE() << "the closure's exception was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "server 1 is gone");
  }
}

}  // namespace
}  // namespace flotilla
