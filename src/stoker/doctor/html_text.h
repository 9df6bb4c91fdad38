#pragma once
// Text and numbers for the HTML report: escaping, and numbers as people read them. Stateless.

#include <string>

namespace stoker::report {

// `text` with &, <, >, " and ' replaced by their entities: safe as element content and as a
// quoted attribute value.
std::string html_escape(const std::string& text);

// `value` with `decimals` digits after the point, without a minus sign on a zero ("-0.0").
std::string fixed(double value, int decimals);

// A duration in milliseconds with about three significant digits ("12.3", "0.456", "1234").
std::string milliseconds(double seconds);

}  // namespace stoker::report
