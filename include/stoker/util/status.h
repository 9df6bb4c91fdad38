#pragma once
// Status and Result<T>: errors as values (docs/DESIGN.md contract 5). A Status carries a code and
// a one-line message that names the file and record involved; the CLI prints it as is.

#include <cassert>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace stoker {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad option or parameter from the caller
  kNotFound,         // a file or directory that should exist does not
  kAlreadyExists,    // an output that must not exist does
  kCorrupt,          // bytes on disk fail a magic, bound or checksum check
  kUnsupported,      // a format version or feature this build does not know
  kIoError,          // the operating system refused a read or write
  kCancelled,        // the operation was stopped on request
  kNoRoom,           // a bounded store (a cache's budget) is full of what is in use now
  kInternal,         // a broken invariant inside stoker
};

// Immutable value: a code plus a message. Thread-compatible.
class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "ok" or the message; used for printing.
  std::string to_string() const { return is_ok() ? std::string("ok") : message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status already_exists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status no_room(std::string m) { return {StatusCode::kNoRoom, std::move(m)}; }

// The exception the C++ API throws at its edge; what() is the Status message.
class Error : public std::runtime_error {
 public:
  explicit Error(Status status)
      : std::runtime_error(status.message()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// Throws Error if `status` is not ok.
inline void throw_if_error(const Status& status) {
  if (!status.is_ok()) throw Error(status);
}

// Either a value or a non-ok Status. Thread-compatible.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.is_ok());
  }

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  // The value, or throws Error.
  T value_or_throw() && {
    throw_if_error(status_);
    return std::move(*value_);
  }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace stoker

// Returns early from the enclosing function if `expr` (a Status) is not ok.
#define STOKER_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    ::stoker::Status stoker_status_ = (expr);           \
    if (!stoker_status_.is_ok()) return stoker_status_; \
  } while (0)

#define STOKER_CONCAT_INNER(a, b) a##b
#define STOKER_CONCAT(a, b) STOKER_CONCAT_INNER(a, b)
// Declares `lhs` from a Result expression or returns its Status.
#define STOKER_ASSIGN_OR_RETURN(lhs, expr)                   \
  auto STOKER_CONCAT(stoker_result_, __LINE__) = (expr);     \
  if (!STOKER_CONCAT(stoker_result_, __LINE__).is_ok())      \
    return STOKER_CONCAT(stoker_result_, __LINE__).status(); \
  lhs = std::move(STOKER_CONCAT(stoker_result_, __LINE__)).value()
