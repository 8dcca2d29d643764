// MPI transport for ProcessGroup (Debian's OpenMPI). Built only when CMake finds MPI; otherwise
// mpi_process_group() reports that the build lacks it.
#include <cstdlib>
#include <string>

#include "engine/error.h"
#include "engine/exchange/process_group.h"

#ifdef VKF_HAVE_MPI
#include <mpi.h>
#endif

namespace vkf {

namespace {

// Launchers set these; a plain `vkf train` must not initialise MPI (and need no mpirun).
bool started_by_mpi_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var)) return true;
  return false;
}

#ifdef VKF_HAVE_MPI
void mpi_check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw Error(std::string("MPI ") + what + " failed: " + std::string(text, size_t(len)));
}

class MpiGroup final : public ProcessGroup {
 public:
  MpiGroup() {
    mpi_check(MPI_Init(nullptr, nullptr), "init");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiGroup() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void sum(float* data, size_t n) override { reduce(data, n, MPI_FLOAT); }
  void sum(double* data, size_t n) override { reduce(data, n, MPI_DOUBLE); }
  const char* transport() const override { return "MPI"; }

 private:
  // MPI counts are ints: large buffers go in pieces.
  template <typename T>
  void reduce(T* data, size_t n, MPI_Datatype type) {
    constexpr size_t k_piece = size_t(1) << 28;
    for (size_t off = 0; off < n; off += k_piece) {
      const int count = int(std::min(k_piece, n - off));
      mpi_check(MPI_Allreduce(MPI_IN_PLACE, data + off, count, type, MPI_SUM, MPI_COMM_WORLD),
                "allreduce");
    }
  }
  int rank_ = 0, size_ = 1;
};
#endif

}  // namespace

bool have_mpi() {
#ifdef VKF_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<ProcessGroup> mpi_process_group() {
  if (!started_by_mpi_launcher()) return nullptr;
#ifdef VKF_HAVE_MPI
  return std::make_unique<MpiGroup>();
#else
  throw Error(
      "started by an MPI launcher, but this vkf was built without MPI (install libopenmpi-dev "
      "and rebuild)");
#endif
}

}  // namespace vkf
