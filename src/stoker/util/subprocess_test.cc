#include "stoker/util/subprocess.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

TEST(SubprocessTest, CollectsOutputErrorsAndExitCode) {
  Result<ProcessResult> r = run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r.value().exit_code, 3);
  EXPECT_EQ(r.value().out, "out\n");
  EXPECT_EQ(r.value().err, "err\n");
  // More than a pipe holds on both streams at once does not block.
  Result<ProcessResult> big =
      run_process({"/bin/sh", "-c", "head -c 300000 /dev/zero; head -c 300000 /dev/zero >&2"});
  ASSERT_TRUE(big.is_ok());
  EXPECT_EQ(big.value().out.size(), 300000u);
  EXPECT_EQ(big.value().err.size(), 300000u);
  EXPECT_EQ(run_process({"sh", "-c", "kill -9 $$"}).value().exit_code, 128 + 9);  // PATH lookup
}

// Arguments are not interpreted by a shell: a semicolon runs nothing, spaces stay in one argument.
TEST(SubprocessTest, ArgumentsReachTheProgramAsTheyAre) {
  testing::TempDir dir;
  const std::string touched = dir / "touched";
  Result<ProcessResult> r =
      run_process({"/bin/echo", "touch " + touched + "; echo", "a b", "$HOME"});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value().out, "touch " + touched + "; echo a b $HOME\n");
  EXPECT_FALSE(std::filesystem::exists(touched));

  Result<ProcessResult> missing = run_process({"touch " + touched + "; /usr/bin/python3"});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("cannot run touch "), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(touched));
}

}  // namespace
}  // namespace stoker
