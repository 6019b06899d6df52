#include "comm/mpi_runtime.h"

#include <mpi.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace depengine::detail::mpi_runtime {

namespace {

std::mutex g_mutex;
std::atomic<int> g_open_groups{0};
std::atomic<bool> g_broken{false};

// Launchers announce the job in the environment: Open MPI's mpirun, and
// PMIx/PMI for srun and other MPICH-style launchers.
bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || g_broken.load() || g_open_groups.load() > 0) return;
  MPI_Finalize();
}

void require_thread_multiple(int provided, const char* who) {
  if (provided < MPI_THREAD_MULTIPLE) {
    throw std::runtime_error(std::string("depengine::Communicator: ") + who +
                             " MPI without MPI_THREAD_MULTIPLE (provided level " +
                             std::to_string(provided) +
                             "); the communicator's progress thread calls MPI beside the program's threads");
  }
}

}  // namespace

bool ensure(std::string& why_not) {
  std::lock_guard lock(g_mutex);
  int initialised = 0, finalized = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalized);
  if (finalized) throw std::runtime_error("depengine::Communicator: MPI was already finalised");
  if (initialised) {
    int provided = 0;
    MPI_Query_thread(&provided);
    require_thread_multiple(provided, "the program initialised");
    return true;
  }
  if (!started_by_launcher()) {
    why_not = "not started by an MPI launcher such as mpirun";
    return false;
  }
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    throw std::runtime_error("depengine::Communicator: MPI_Init_thread failed");
  }
  std::atexit(finalize_at_exit);
  require_thread_multiple(provided, "this");
  return true;
}

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, static_cast<std::size_t>(length));
  const std::size_t cut = s.find_first_of(",\n");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

double timeout_seconds() {
  constexpr double kDefaultSeconds = 600;
  const char* text = std::getenv("DEPENGINE_COMM_TIMEOUT");
  if (text == nullptr || *text == '\0') return kDefaultSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds > 0)) {
    throw std::runtime_error(std::string("depengine: DEPENGINE_COMM_TIMEOUT must be a positive number of seconds, "
                                         "not '") + text + "'");
  }
  return seconds;
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void group_opened() { g_open_groups.fetch_add(1); }
void group_closed() { g_open_groups.fetch_sub(1); }
void mark_broken() { g_broken.store(true); }

}  // namespace depengine::detail::mpi_runtime
