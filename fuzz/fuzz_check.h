#pragma once
// What a fuzz target asserts: a violated property stops the run as a crash libFuzzer keeps.

namespace stoker::fuzz {

inline void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace stoker::fuzz
