// Document boundaries' pieces on their own: prompts (a document's tokens up to its first
// prompt-end token) and the labels they mask, and the causal block-diagonal document mask,
// worked by hand.
#include "stoker/store/import/token_boundaries.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(DocumentPrompts, EachDocumentsFirstEndClosesItsPrompt) {
  // Documents at 0, 10 and 20 (to 30); ends at 3 and 6 (the first counts), 10 (the document's
  // first token: a prompt of that token alone), 14 (not the 10's document's first) and 25. A
  // prompt holds its document's first token, which the document before's last label predicts.
  const std::vector<PromptRange> prompts = document_prompts({10, 20}, {3, 6, 10, 14, 25});
  ASSERT_EQ(prompts.size(), 3u);
  EXPECT_EQ(prompts[0].first, 0u);
  EXPECT_EQ(prompts[0].last, 3u);
  EXPECT_EQ(prompts[1].first, 10u);
  EXPECT_EQ(prompts[1].last, 10u);
  EXPECT_EQ(prompts[2].first, 20u);
  EXPECT_EQ(prompts[2].last, 25u);
  // Labels predicting tokens 20..27 of the array (18..25 of a reader starting at its token 2):
  // targets 20..25 are in the third prompt.
  std::vector<int64_t> labels(8, 1);
  PromptMasks masks{std::make_shared<const std::vector<PromptRange>>(prompts), 2};
  masks.apply(18, labels.size(), reinterpret_cast<uint8_t*>(labels.data()));
  EXPECT_EQ(labels, (std::vector<int64_t>{-100, -100, -100, -100, -100, -100, 1, 1}));
  PromptMasks none;
  const std::vector<int64_t> before = labels;
  none.apply(0, labels.size(), reinterpret_cast<uint8_t*>(labels.data()));
  EXPECT_EQ(labels, before);  // no prompts: nothing changed
}

TEST(DocumentMask, CausalWithinEachSegmentOnly) {
  uint8_t mask[25];
  write_document_mask({0, 2, 5}, 5, mask);
  const uint8_t want[25] = {1, 0, 0, 0, 0,  //
                            1, 1, 0, 0, 0,  //
                            0, 0, 1, 0, 0,  //
                            0, 0, 1, 1, 0,  //
                            0, 0, 1, 1, 1};
  for (int i = 0; i < 25; ++i) EXPECT_EQ(mask[i], want[i]) << i;
}

}  // namespace
}  // namespace stoker
