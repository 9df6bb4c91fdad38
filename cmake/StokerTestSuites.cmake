# stoker_add_test_suites(TARGET): one ctest test per GoogleTest suite of the test executable
# TARGET, labelled TARGET, instead of one per test case (GoogleTest's gtest_discover_tests).
# A suite's cases share one process, as GoogleTest runs them: its SetUpTestSuite (a server, a
# reference run) is done once, and the process start (LibTorch's libraries mapped, ASan's shadow
# set up) is paid per suite, not per case: the suites' wall time halves. Each suite writes its
# cases' results to <build>/gtest-xml/TARGET.SUITE.xml, which scripts/test.sh counts.
#
# The suites are listed after each build of TARGET (`TARGET --gtest_list_tests`, by
# StokerListSuites.cmake) into a file that ctest includes, as GoogleTest's module does.
set(STOKER_LIST_SUITES_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/StokerListSuites.cmake)

function(stoker_add_test_suites target)
  set(suites_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    BYPRODUCTS ${suites_file}
    COMMAND ${CMAKE_COMMAND} "-DEXECUTABLE=$<TARGET_FILE:${target}>" "-DLABEL=${target}"
      "-DXML_DIR=${CMAKE_BINARY_DIR}/gtest-xml" "-DOUT=${suites_file}"
      -P ${STOKER_LIST_SUITES_SCRIPT}
    VERBATIM)
  file(WRITE ${include_file}
    "if(EXISTS \"${suites_file}\")\n"
    "  include(\"${suites_file}\")\n"
    "else()\n"
    "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
