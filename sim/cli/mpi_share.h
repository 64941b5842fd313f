// How `megasim search` runs under mpirun: MPI is initialised only when the process was
// launched by OpenMPI's mpirun (OMPI_COMM_WORLD_SIZE set), so that every other command, and
// search run alone, never touches MPI. Each rank takes every size-th plan of each stage
// (plan::SearchShare) and the figures are all-gathered between the stages; every rank then
// ranks the same figures, and rank 0 prints. Without MPI at build time (MEGASIM_HAVE_MPI
// unset), a launch under mpirun with more than one rank is refused rather than run size times.
//
// Bad input refused by every rank alike, before the ranks first talk, is said once by rank 0
// and every rank exits with main()'s status. A rank that throws alone (its own input, or an
// internal error) prints why and aborts the job with the status main() would give, rather than
// leave the others waiting in a gather. A rank that dies takes the job with it (OpenMPI aborts
// every rank by default): its share is not lost when the search runs with --results, since each
// rank appends every plan it finishes to that file, and the search run again (with any number of
// ranks) skips them.
#pragma once

#include "plan/search.h"

namespace megasim::cli {

class MpiShare {
 public:
  MpiShare();
  ~MpiShare();
  MpiShare(const MpiShare&) = delete;
  MpiShare& operator=(const MpiShare&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  plan::SearchShare share() const;
  // How many ranks pass `flag` true (an all-reduce every rank must reach); `flag` alone
  // outside MPI.
  int count(bool flag) const;
  // Ends every rank of the job with `status` (MPI_Abort); returns only outside MPI.
  void abort(int status) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  bool initialised_ = false;
};

}  // namespace megasim::cli
