#include "stoker/util/file_checksum.h"

#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "stoker/util/regular_file.h"

namespace stoker {

Result<uint64_t> file_checksum(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path));
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                       &XXH3_freeState);
  if (!state || XXH3_64bits_reset(state.get()) != XXH_OK)
    return io_error(path + ": cannot start a checksum");
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(file.fd(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error(path + ": read failed: " + std::strerror(errno));
    if (n == 0) return XXH3_64bits_digest(state.get());
    XXH3_64bits_update(state.get(), chunk, static_cast<size_t>(n));
  }
}

}  // namespace stoker
