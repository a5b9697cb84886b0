// Test support: threads as ranks. RunRanks runs fn(rank) for every rank on
// its own thread, joins them all, and rethrows the lowest rank's failure.
#pragma once

#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace flotilla::comm::testing {

inline void RunRanks(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace flotilla::comm::testing
