# SPDX-License-Identifier: GPL-2.0
# Included by the top-level CMakeLists.txt: builds selftests/fuzz with
# clang-14 as an external project in <build>/fuzz when clang-14 can link
# libFuzzer, and registers a short run of every harness with CTest (so
# make check counts them). make fuzz runs them for longer. Without a
# clang-14 that links libFuzzer the build fails (target xiw_fuzz_missing)
# with the reason, unless -DXIW_FUZZ=OFF.
option(XIW_FUZZ "Build the libFuzzer harnesses of selftests/fuzz (clang-14)" ON)
set(XIW_FUZZ_RUNS 1000000 CACHE STRING
  "Executions per harness in the CTest short run (fixed seed); the stream harness, ~10x slower per input, runs a fifth")
set(XIW_FUZZ_HARNESSES ddp_hdr fpdu_stream mpa term atomic)

if(XIW_FUZZ)
  find_program(XIW_FUZZ_CXX NAMES clang++-14)
  set(xiw_fuzz_ok FALSE)
  set(xiw_fuzz_why "clang++-14 not found")
  if(XIW_FUZZ_CXX)
    # Can it link a libFuzzer target with ASan and UBSan?
    set(probe ${CMAKE_BINARY_DIR}/fuzz-probe)
    file(MAKE_DIRECTORY ${probe})
    file(WRITE ${probe}/probe.cpp
      "#include <cstddef>\n#include <cstdint>\n"
      "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t *, size_t)"
      " { return 0; }\n")
    execute_process(
      COMMAND ${XIW_FUZZ_CXX} -std=c++20 -fsanitize=fuzzer,address,undefined
              probe.cpp -o probe
      WORKING_DIRECTORY ${probe} RESULT_VARIABLE rv
      OUTPUT_QUIET ERROR_QUIET)
    if(rv EQUAL 0)
      set(xiw_fuzz_ok TRUE)
    else()
      set(xiw_fuzz_why "${XIW_FUZZ_CXX} cannot link -fsanitize=fuzzer,address,undefined (libfuzzer-14-dev, libclang-rt-14-dev missing?)")
    endif()
  endif()

  if(xiw_fuzz_ok)
    message(STATUS "xiw: fuzzers enabled (${XIW_FUZZ_CXX}), built in ${CMAKE_BINARY_DIR}/fuzz")
    include(ExternalProject)
    ExternalProject_Add(xiw_fuzz
      SOURCE_DIR ${XIW_TOP}/selftests/fuzz
      BINARY_DIR ${CMAKE_BINARY_DIR}/fuzz
      CMAKE_ARGS -DCMAKE_CXX_COMPILER=${XIW_FUZZ_CXX} -DXIW_TOP=${XIW_TOP}
      BUILD_ALWAYS ON
      INSTALL_COMMAND ""
      USES_TERMINAL_BUILD ON)
    foreach(h ${XIW_FUZZ_HARNESSES})
      set(runs ${XIW_FUZZ_RUNS})
      if(h STREQUAL "fpdu_stream")
        math(EXPR runs "${XIW_FUZZ_RUNS} / 5")
      endif()
      add_test(NAME fuzz_${h}
        COMMAND bash ${XIW_TOP}/selftests/fuzz/run.sh
                --build ${CMAKE_BINARY_DIR}/fuzz --runs ${runs} ${h})
      set_tests_properties(fuzz_${h} PROPERTIES TIMEOUT 300 LABELS fuzz)
    endforeach()
    # The committed seeds are what the wire code's encoders produce today.
    add_test(NAME fuzz_corpus_current
      COMMAND bash ${XIW_TOP}/selftests/fuzz/run.sh
              --build ${CMAKE_BINARY_DIR}/fuzz --check-corpus)
    set_tests_properties(fuzz_corpus_current PROPERTIES TIMEOUT 60 LABELS fuzz)
  else()
    # Not silently: the harnesses are part of the tests (make check runs
    # them), so a build without them fails, saying why, unless they were
    # turned off on purpose (-DXIW_FUZZ=OFF).
    set(xiw_fuzz_msg "xiw: the libFuzzer harnesses (selftests/fuzz) cannot be built: ${xiw_fuzz_why}; install clang-14 libfuzzer-14-dev libclang-rt-14-dev (make deps) or configure with -DXIW_FUZZ=OFF")
    message(WARNING "${xiw_fuzz_msg}")
    add_custom_target(xiw_fuzz_missing ALL
      COMMAND ${CMAKE_COMMAND} -E echo "${xiw_fuzz_msg}"
      COMMAND ${CMAKE_COMMAND} -E false
      VERBATIM)
  endif()
endif()
