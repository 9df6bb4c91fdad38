#include "stoker/net/secret.h"

#include <string.h>

namespace stoker::remote {

Secret& Secret::operator=(const Secret& other) {
  if (this != &other) {
    wipe();
    value_ = other.value_;
  }
  return *this;
}

Secret::Secret(Secret&& other) noexcept : value_(other.value_) { other.wipe(); }

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    wipe();
    value_ = other.value_;
    other.wipe();
  }
  return *this;
}

Secret::~Secret() { wipe(); }

void Secret::wipe() {
  ::explicit_bzero(value_.data(), value_.size());
  value_.clear();
}

}  // namespace stoker::remote
