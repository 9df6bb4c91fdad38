#include "stoker/doctor/html_text.h"

#include <fmt/format.h>

#include <cmath>

namespace stoker::report {

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fixed(double value, int decimals) {
  std::string text = fmt::format("{:.{}f}", value, decimals);
  if (text.find_first_not_of("-0.") == std::string::npos && text[0] == '-') text.erase(0, 1);
  return text;
}

std::string milliseconds(double seconds) {
  const double ms = seconds * 1000;
  const double size = std::fabs(ms);
  return fixed(ms, size >= 100 ? 0 : size >= 10 ? 1 : size >= 1 ? 2 : 3);
}

}  // namespace stoker::report
