#pragma once
// MpiRuntime: MPI's process-wide state as depengine sees it. MPI is set up
// once per process: reused when the program initialised it, initialised by
// us (MPI_THREAD_MULTIPLE) when an MPI launcher started the process, and
// left alone otherwise. What we initialised we finalise at exit, unless a
// communicator broke (a peer may be gone, and MPI_Finalize would wait for
// it) or one is still alive (its progress thread still calls MPI).

#include <string>

namespace depengine::detail::mpi_runtime {

/// True when MPI is usable; false, with `why_not` set, when this process
/// runs alone (no launcher, nobody initialised MPI). Throws
/// std::runtime_error when MPI is initialised without MPI_THREAD_MULTIPLE,
/// already finalised, or fails to start.
bool ensure(std::string& why_not);

/// "Open MPI v4.1.4", the library's own first line.
std::string library_version();

/// DEPENGINE_COMM_TIMEOUT in seconds (600 when unset): how long a process
/// waits for its peers before it gives up on them. Throws
/// std::runtime_error for a value that is not a positive number.
double timeout_seconds();

/// MPI's text for an error code.
std::string mpi_error_text(int code);

/// Counts the groups whose progress threads call MPI.
void group_opened();
void group_closed();
/// A communicator gave up on a peer: skip MPI_Finalize at exit.
void mark_broken();

}  // namespace depengine::detail::mpi_runtime
