# depengine_add_mpi_test(<name> NP <n> TIMEOUT <s> COMM_TIMEOUT <s>
#                        [PEERS_MAY_DIE] [PASS <regex>] [FAIL <regex>]
#                        COMMAND <target> [<arg>...])
#
# A ctest test that runs <target> under mpirun on <n> processes, as the
# project's tests must run there: as root (both Open MPI variables),
# oversubscribed on shared memory only, with Open MPI's exit-time leaks
# suppressed under AddressSanitizer, bounded by TIMEOUT (ctest ends mpirun
# and its processes) and by DEPENGINE_COMM_TIMEOUT inside depengine.
# GoogleTest prints only failures (GTEST_BRIEF): the processes' logs
# interleave, and a failure must not drown among their passing lines.
# PEERS_MAY_DIE tells mpirun not to end the job when one process dies, so
# that the survivors live to report the error the test looks for.
#
#   depengine_add_mpi_test(comm_mpi.np2 NP 2 TIMEOUT 300 COMM_TIMEOUT 60 COMMAND comm_mpi_tests)

function(depengine_add_mpi_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "PEERS_MAY_DIE" "NP;TIMEOUT;COMM_TIMEOUT;PASS;FAIL" "COMMAND")
  list(POP_FRONT arg_COMMAND program)
  set(keep_going)
  if(arg_PEERS_MAY_DIE)
    set(keep_going --mca orte_abort_on_non_zero_status 0)
  endif()
  add_test(NAME ${name}
           COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe ${keep_going} -np ${arg_NP} $<TARGET_FILE:${program}>
                   ${arg_COMMAND})
  set(lsan "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/support/lsan-mpi.supp:fast_unwind_on_malloc=0")
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_btl=self,vader;${lsan};GTEST_BRIEF=1;DEPENGINE_COMM_TIMEOUT=${arg_COMM_TIMEOUT}"
    TIMEOUT ${arg_TIMEOUT} PROCESSORS 2)
  if(arg_PASS)
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${arg_PASS}")
  endif()
  if(arg_FAIL)
    set_tests_properties(${name} PROPERTIES FAIL_REGULAR_EXPRESSION "${arg_FAIL}")
  endif()
endfunction()
