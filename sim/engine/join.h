// A join of n completions: a callback to hand to n concurrent operations (flows, collectives)
// that runs `done` once, on the n-th call. Shares its counter between its copies.
#pragma once

#include <cassert>
#include <functional>
#include <memory>
#include <utility>

namespace megasim {

inline std::function<void()> after_all(int n, std::function<void()> done) {
  assert(n > 0);
  struct Join {
    int left;
    std::function<void()> done;
  };
  auto join = std::make_shared<Join>(Join{n, std::move(done)});
  return [join] {
    if (--join->left == 0) join->done();
  };
}

}  // namespace megasim
