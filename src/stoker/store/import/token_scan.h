#pragma once
// Token ids scanned against a bound: the largest of an array's tokens, and the first at or above
// a vocabulary's size (TokenSourceOptions::vocab_size). Each token is read as the unsigned
// integer of its size (a negative int16 as 65536 plus it: callers check signed tokens first,
// token_layout.h). Vectorised: compiled by Highway for every x86 target it knows and picked at
// run time, as widen_int64.cc. Stateless functions; thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "stoker/store/import/token_layout.h"

namespace stoker {

// The largest of the `n` tokens of `type` at `bytes` (0 for none).
uint64_t largest_token(TokenType type, const uint8_t* bytes, size_t n);
// The index of the first of those tokens at or above `limit`, or nullopt when all are below.
std::optional<size_t> first_token_from(TokenType type, const uint8_t* bytes, size_t n,
                                       uint64_t limit);

}  // namespace stoker
