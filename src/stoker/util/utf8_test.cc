#include "stoker/util/utf8.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(Utf8Test, WellFormedSequencesAreValid) {
  for (const char* text : {"", "plain ascii", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x90\x88",
                           "\xed\x9f\xbf", "\xee\x80\x80", "\xf4\x8f\xbf\xbf"})
    EXPECT_TRUE(is_valid_utf8(text)) << text;
}

TEST(Utf8Test, IllFormedSequencesAreNot) {
  for (const char* text : {
           "\xff",              // never a UTF-8 byte
           "\x80",              // a continuation byte alone
           "\xc3",              // truncated
           "\xe2\x82",          // truncated
           "\xc0\xaf",          // overlong '/'
           "\xe0\x80\xaf",      // overlong '/'
           "\xf0\x80\x80\xaf",  // overlong '/'
           "\xed\xa0\x80",      // a surrogate
           "\xf4\x90\x80\x80",  // above U+10FFFF
           "\xe2\x28\xa1",      // a bad continuation
           "ok\xfe",
       })
    EXPECT_FALSE(is_valid_utf8(text)) << printable(text);
}

TEST(Utf8Test, PrintableEscapesWhatIsNotPrintableText) {
  EXPECT_EQ(printable("caf\xc3\xa9/x.jpg"), "caf\xc3\xa9/x.jpg");
  EXPECT_EQ(printable("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(printable("bad\xff\xfe"), "bad\\xff\\xfe");
  EXPECT_EQ(printable("\xe2\x82"), "\\xe2\\x82");
  EXPECT_EQ(printable("\xc2\x85"), "\\xc2\\x85");  // U+0085, a C1 control (next line)
  EXPECT_EQ(printable("a\\xff"), "a\\\\xff");      // a backslash is escaped: no ambiguity
  EXPECT_TRUE(is_valid_utf8(printable("\xff\xc3\x28\xed\xa0\x80")));
}

TEST(Utf8Test, PrintableListShortensLongLists) {
  EXPECT_EQ(printable_list({}, 3), "");
  EXPECT_EQ(printable_list({"a", "b\n"}, 3), "a, b\\x0a");
  EXPECT_EQ(printable_list({"a", "b", "c"}, 3), "a, b, c");
  EXPECT_EQ(printable_list({"a", "b", "c", "d", "e"}, 2), "a, b and 3 more");
}

TEST(Utf8Test, FsdecodeMatchesPythonsSurrogateescape) {
  // Values from Python: [hex(ord(c)) for c in os.fsdecode(b"...")].
  EXPECT_EQ(fsdecode_code_points("ab"), U"ab");
  EXPECT_EQ(fsdecode_code_points("\xc3\xa9"), U"\u00e9");
  EXPECT_EQ(fsdecode_code_points("a\xff"), (std::u32string{'a', 0xdcff}));
  EXPECT_EQ(fsdecode_code_points("\xe2\x82\x61"), (std::u32string{0xdce2, 0xdc82, 'a'}));
  EXPECT_EQ(fsdecode_code_points("\xe2\x82\xe2\x82\xac"), (std::u32string{0xdce2, 0xdc82, 0x20ac}));
  EXPECT_EQ(fsdecode_code_points("\xed\xa0\x80"), (std::u32string{0xdced, 0xdca0, 0xdc80}));
  // Python orders by code point, which differs from byte order once names are not UTF-8:
  // b"\xff" (U+DCFF) sorts before "\ue000" (bytes EE 80 80) though 0xFF > 0xEE.
  EXPECT_LT(fsdecode_code_points("\xff"), fsdecode_code_points("\xee\x80\x80"));
}

}  // namespace
}  // namespace stoker
