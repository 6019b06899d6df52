# bench/metg as a program, at a tiny size: each system's points come back
# from their child processes into the JSON record, and bad input exits 2.
if(DEPENGINE_BUILD_BENCH)
  set(metg_args --steps 20 --runs 1 --max-grain-us 8 --min-grain-us 2)
  add_test(NAME metg.child_processes
    COMMAND sh -c "\"$0\" \"$@\" --json metg_test.json && grep -c '\"metg_us\"' metg_test.json | grep -qx 4"
            $<TARGET_FILE:metg> ${metg_args})
  add_test(NAME metg.in_process COMMAND metg ${metg_args} --in-process --systems depengine)
  add_test(NAME metg.unknown_system COMMAND sh -c "\"$0\" --systems nosuch; test $? -eq 2" $<TARGET_FILE:metg>)
  add_test(NAME metg.inverted_range COMMAND sh -c "\"$0\" --min-grain-us 9 --max-grain-us 1; test $? -eq 2"
                                            $<TARGET_FILE:metg>)
  set_tests_properties(metg.child_processes metg.in_process metg.unknown_system metg.inverted_range
                       PROPERTIES TIMEOUT 60)
endif()
