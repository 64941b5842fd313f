// Relative least squares shared by the calibration fits (calibrate/ only, not a public API).
#pragma once

#include <cmath>
#include <utility>

#include <Eigen/Dense>

namespace megasim::calibrate {

// Solves min ‖A·x − 1‖ where each row of A is already divided by its measured time, so the
// residuals are relative errors. Returns x and the RMS of the residuals.
inline std::pair<Eigen::VectorXd, double> relative_least_squares(const Eigen::MatrixXd& a) {
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(a.rows());
  const Eigen::VectorXd x = a.colPivHouseholderQr().solve(ones);
  const Eigen::VectorXd r = a * x - ones;
  return {x, std::sqrt(r.squaredNorm() / static_cast<double>(a.rows()))};
}

// Fits t = c0 + Σ c_j·f_j with c0 ≥ 0: design columns are [1, f_1, …] / t. Drops the
// intercept when it comes out negative.
inline std::pair<Eigen::VectorXd, double> fit_with_intercept(Eigen::MatrixXd a) {
  auto [x, rms] = relative_least_squares(a);
  if (x(0) < 0.0) {
    a.col(0).setZero();
    const Eigen::MatrixXd rest = a.rightCols(a.cols() - 1);
    auto [x2, rms2] = relative_least_squares(rest);
    x(0) = 0.0;
    x.tail(x.size() - 1) = x2;
    rms = rms2;
  }
  return {x, rms};
}

}  // namespace megasim::calibrate
