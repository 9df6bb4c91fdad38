#include "stoker/util/checksum.h"

#include <xxhash.h>

namespace stoker {

uint64_t xxh3_64(const void* data, size_t size) { return XXH3_64bits(data, size); }

}  // namespace stoker
