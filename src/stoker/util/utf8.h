#pragma once
// UTF-8 for names that come from the file system (bytes, not necessarily text): validity, a
// printable form for one-line messages, and the code points Python gives them (the order
// torchvision sorts names in). Pure functions; thread-safe.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

// True if `text` is well-formed UTF-8: no overlong forms, no surrogates (U+D800..U+DFFF),
// nothing above U+10FFFF, no truncated sequence.
bool is_valid_utf8(std::string_view text);

// `text` for a one-line message: well-formed UTF-8 characters from U+0020 on are kept (DEL and
// the C1 controls excepted), a backslash becomes "\\", and every other byte "\xNN" (two
// lower-case hex digits), so the result is valid UTF-8 without a line break and names the
// bytes unambiguously.
std::string printable(std::string_view text);

// The first `shown` of `names`, each printable(), joined by ", ", then " and N more" if some
// are left out: "a, b, c" or "a, b and 12 more".
std::string printable_list(const std::vector<std::string>& names, size_t shown);

// The code points Python's os.fsdecode() gives the bytes `name` on Linux (UTF-8 with
// surrogateescape): each well-formed UTF-8 sequence becomes its code point, and every other
// byte b becomes U+DC00 + b. Python's sorted() orders str by these code points.
std::u32string fsdecode_code_points(std::string_view name);

}  // namespace stoker
