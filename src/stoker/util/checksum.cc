#include "stoker/util/checksum.h"

#include <xxhash.h>

namespace stoker {

uint64_t xxh64(const void* data, size_t size) { return XXH64(data, size, 0); }

struct StreamingXxh64::State {
  XXH64_state_t* s = XXH64_createState();
  ~State() { XXH64_freeState(s); }
};

StreamingXxh64::StreamingXxh64() : state_(std::make_unique<State>()) { XXH64_reset(state_->s, 0); }
StreamingXxh64::~StreamingXxh64() = default;

void StreamingXxh64::update(const void* data, size_t size) { XXH64_update(state_->s, data, size); }

uint64_t StreamingXxh64::digest() const { return XXH64_digest(state_->s); }

}  // namespace stoker
