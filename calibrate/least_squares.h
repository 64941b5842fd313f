// Relative least squares shared by the calibration fits (calibrate/ only, not a public API).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/Dense>

namespace megasim::calibrate {

// What bounded_least_squares found: x, the RMS of its residuals, and whether it is the optimum
// (no column held at its bound would lower the residual) or where the step cap stopped it.
struct BoundedFit {
  Eigen::VectorXd x;
  double rms = 0.0;
  bool converged = true;
};

// Solves min ‖A·x − 1‖ subject to x ≥ lower (element by element), A as above: Lawson and
// Hanson's active-set method for non-negative least squares on y = x − lower, over columns
// scaled to unit norm (a fit's columns differ by orders of magnitude: seconds⁻¹ beside ratios).
// Exact for any number of unknowns; deterministic. `max_steps` (< 0: 3n + 3, as the usual
// implementations bound it) caps the outer steps; a fit stopped there says so.
inline BoundedFit bounded_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& lower,
                                        Eigen::Index max_steps = -1) {
  const Eigen::Index n = a.cols();
  Eigen::VectorXd scale = a.colwise().norm().transpose();
  for (Eigen::Index j = 0; j < n; ++j) scale(j) = scale(j) > 0.0 ? scale(j) : 1.0;
  const Eigen::MatrixXd s = a * scale.cwiseInverse().asDiagonal();
  const Eigen::VectorXd b = Eigen::VectorXd::Ones(a.rows()) - a * lower;
  // The one tolerance, on the gradient and on "above the bound", relative to the problem's size.
  const double tol = 1e-12 * static_cast<double>(std::max(a.rows(), n)) * (1.0 + b.norm());
  std::vector<Eigen::Index> free;  // the columns off their bound
  Eigen::VectorXd y = Eigen::VectorXd::Zero(n);
  // The least-squares solution over the free columns, zero elsewhere.
  const auto solve_free = [&] {
    Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
    if (free.empty()) return z;
    Eigen::MatrixXd sub(s.rows(), static_cast<Eigen::Index>(free.size()));
    for (std::size_t i = 0; i < free.size(); ++i)
      sub.col(static_cast<Eigen::Index>(i)) = s.col(free[i]);
    const Eigen::VectorXd zs = sub.colPivHouseholderQr().solve(b);
    for (std::size_t i = 0; i < free.size(); ++i) z(free[i]) = zs(static_cast<Eigen::Index>(i));
    return z;
  };
  // The held column of the steepest descent, -1 when none would lower the residual.
  const auto steepest_held = [&] {
    const Eigen::VectorXd w = s.transpose() * (b - s * y);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < n; ++j) {
      const bool held = std::find(free.begin(), free.end(), j) == free.end();
      if (held && w(j) > tol && (best < 0 || w(j) > w(best))) best = j;
    }
    return best;
  };
  // Each outer step frees the column of the steepest descent; the cap stops rounding from
  // freeing and holding one column back and forth for ever.
  const Eigen::Index steps = max_steps < 0 ? 3 * n + 3 : max_steps;
  for (Eigen::Index step = 0; step < steps; ++step) {
    const Eigen::Index best = steepest_held();
    if (best < 0) break;
    free.push_back(best);
    // Each pass holds one free column more, so this ends.
    for (;;) {
      const Eigen::VectorXd z = solve_free();
      double alpha = 1.0;
      Eigen::Index hit = -1;
      for (const Eigen::Index j : free) {
        if (z(j) > tol) continue;
        const double at = y(j) / std::max(y(j) - z(j), tol);
        if (hit < 0 || at < alpha) alpha = std::min(1.0, at), hit = j;
      }
      if (hit < 0) {
        y = z;
        break;
      }
      // Back along the step to the first bound met: that column, and any other there, is held.
      y += alpha * (z - y);
      y(hit) = 0.0;
      std::erase_if(free, [&](Eigen::Index j) { return j == hit || y(j) <= tol; });
      for (Eigen::Index j = 0; j < n; ++j) {
        if (std::find(free.begin(), free.end(), j) == free.end()) y(j) = 0.0;
      }
    }
  }
  BoundedFit fit;
  fit.converged = steepest_held() < 0;
  fit.x = lower + y.cwiseQuotient(scale);
  const Eigen::VectorXd r = a * fit.x - Eigen::VectorXd::Ones(a.rows());
  fit.rms = std::sqrt(r.squaredNorm() / static_cast<double>(a.rows()));
  return fit;
}

}  // namespace megasim::calibrate
