#pragma once
// The processes of a data-parallel run across machines (one per GPU), as an existing transport
// provides them: MPI when vkformer is built with it and started by mpirun. Only host arrays are
// exchanged; device buffers reach them through host-visible staging (gradient_exchange.h).
#include <cstddef>
#include <memory>

namespace vkf {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Element-wise sum across the processes, in place; every process gets the same result.
  virtual void sum(float* data, size_t n) = 0;
  virtual void sum(double* data, size_t n) = 0;
  virtual const char* transport() const = 0;
};

// The MPI world when this process was started by mpirun/mpiexec (and the build has MPI);
// nullptr otherwise. MPI is finalised when the group is destroyed.
std::unique_ptr<ProcessGroup> mpi_process_group();

// True when the build includes the MPI transport.
bool have_mpi();

}  // namespace vkf
