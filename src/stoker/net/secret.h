#pragma once
// Secret: a credential's value (an AWS secret key, a session token) that cannot be printed by
// accident: no stream or fmt operator, no conversion, no comparison; the one way to the bytes is
// reveal(), called where they are handed to libcurl. Its memory is wiped on destruction.
// docs/REMOTE-DESIGN.md, section 4 ("Secrets"). A value; thread-compatible.

#include <iosfwd>
#include <string>

namespace stoker::remote {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  Secret(const Secret&) = default;
  Secret& operator=(const Secret& other);
  Secret(Secret&& other) noexcept;
  Secret& operator=(Secret&& other) noexcept;
  ~Secret();

  bool empty() const { return value_.empty(); }
  const std::string& reveal() const { return value_; }

 private:
  void wipe();

  std::string value_;
};

// Printing a Secret does not compile (fmt finds no formatter either).
std::ostream& operator<<(std::ostream&, const Secret&) = delete;

}  // namespace stoker::remote
