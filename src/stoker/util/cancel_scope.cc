#include "stoker/util/cancel_scope.h"

#include "stoker/util/status.h"

namespace stoker {
namespace {

thread_local const std::function<bool()>* t_cancelled = nullptr;
const std::function<bool()> kNever;

}  // namespace

CancelScope::CancelScope(const std::function<bool()>* cancelled) : outer_(t_cancelled) {
  t_cancelled = cancelled;
}

CancelScope::~CancelScope() { t_cancelled = outer_; }

const std::function<bool()>& cancellation_in_scope() { return t_cancelled ? *t_cancelled : kNever; }

void throw_if_cancelled() {
  if (t_cancelled && *t_cancelled && (*t_cancelled)())
    throw Error(Status(StatusCode::kCancelled, "cancelled"));
}

}  // namespace stoker
