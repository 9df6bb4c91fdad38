#include "stoker/util/process_id.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace stoker {
namespace {

// The id is getpid()'s, in the parent and, after a fork, in the child: the child's own, not
// the id its parent had read before forking.
TEST(ProcessId, IsGetpidsAlsoInAForksChild) {
  const pid_t parent = process_id();
  EXPECT_EQ(parent, ::getpid());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const pid_t seen = process_id();
    const char verdict = seen == ::getpid() && seen != parent ? 'y' : 'n';
    static_cast<void>(::write(pipe_fds[1], &verdict, 1));
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  char verdict = 0;
  EXPECT_EQ(::read(pipe_fds[0], &verdict, 1), 1);
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(verdict, 'y');
  EXPECT_EQ(process_id(), parent);
}

}  // namespace
}  // namespace stoker
