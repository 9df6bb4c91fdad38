#pragma once
// Where this build's files are, for the test suites: constants defined in a source that CMake
// generates in the build folder (testing/CMakeLists.txt, stoker_test_paths), never macros on
// the compile line. A path on a compile line changes with the checkout, so ccache could not
// reuse the objects of another clone of the same commit (CI builds a fresh clone).

namespace stoker::testing {

// The source tree (python/tests/servers.py, src/stoker/testing/torchvision_reference.py).
extern const char* const kSourceDir;
// The built `stoker` binary; defined in builds with the trainer and the CLI.
extern const char* const kStokerCliPath;
// The distributed suite's rank program (dist_test_worker.cc); builds with the trainer.
extern const char* const kDistWorkerPath;
// The library that makes MKL dispatch as on an Intel CPU (mkl_as_intel.cc), preloaded.
extern const char* const kMklAsIntelPath;
// Where the test data made once per build is kept (made_once.h): <build>/test-data.
extern const char* const kTestDataDir;

}  // namespace stoker::testing
