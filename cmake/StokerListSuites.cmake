# Run by stoker_add_test_suites (StokerTestSuites.cmake) after a test executable is built:
# writes OUT, the ctest tests of EXECUTABLE's GoogleTest suites, one per suite, labelled LABEL,
# each writing its cases' results to XML_DIR/LABEL.SUITE.xml ('/' of a suite's name as '_').
execute_process(COMMAND "${EXECUTABLE}" --gtest_list_tests
  OUTPUT_VARIABLE listing RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests failed: ${rc}")
endif()
# A suite's line is its name and a dot, unindented (its cases follow, indented); a typed or
# parameterized suite's may end in a comment.
string(REGEX MATCHALL "(^|\n)[^ \n#]+\\.( +#[^\n]*)?(\n|$)" lines "${listing}")
set(content "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^\n?([^ \n#]+)\\..*" "\\1" suite "${line}")
  string(REPLACE "/" "_" file_name "${suite}")
  string(APPEND content
    "add_test([=[${LABEL}.${suite}]=] \"${EXECUTABLE}\" [=[--gtest_filter=${suite}.*]=] "
    "[=[--gtest_output=xml:${XML_DIR}/${LABEL}.${file_name}.xml]=])\n"
    "set_tests_properties([=[${LABEL}.${suite}]=] PROPERTIES LABELS ${LABEL})\n")
endforeach()
if(content STREQUAL "")
  message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests lists no suite")
endif()
file(WRITE "${OUT}" "${content}")
