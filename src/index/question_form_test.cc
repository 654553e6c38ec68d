#include "index/question_form.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

TEST(QuestionFormTest, EndsWithQuestion) {
  EXPECT_TRUE(EndsWithQuestion("Where did you go?"));
  EXPECT_TRUE(EndsWithQuestion("Where did you go?  \n"));
  EXPECT_TRUE(EndsWithQuestion("She asked \"why?\""));
  EXPECT_TRUE(EndsWithQuestion("(really?)"));
  EXPECT_TRUE(EndsWithQuestion("你去哪儿了？"));
  EXPECT_TRUE(EndsWithQuestion("أين ذهبت؟"));
  EXPECT_FALSE(EndsWithQuestion("I went to the beach."));
  EXPECT_FALSE(EndsWithQuestion("Why? Because it was sunny."));
  EXPECT_FALSE(EndsWithQuestion(""));
  EXPECT_FALSE(EndsWithQuestion("  \" ) "));
}

TEST(QuestionFormTest, WithoutQuestionMark) {
  EXPECT_EQ(WithoutQuestionMark("Where did she go?"), "Where did she go");
  EXPECT_EQ(WithoutQuestionMark("Where did she go ?? "), "Where did she go");
  EXPECT_EQ(WithoutQuestionMark("她去哪儿了？"), "她去哪儿了");
  EXPECT_EQ(WithoutQuestionMark("hiking trips"), "hiking trips");
  EXPECT_EQ(WithoutQuestionMark("Why? Because"), "Why? Because");
  // Nothing but question marks: the query is kept as it is rather than embedded empty.
  EXPECT_EQ(WithoutQuestionMark("??"), "??");
  EXPECT_EQ(WithoutQuestionMark(""), "");
}

TEST(QuestionFormTest, NamesCodeIdentifier) {
  for (const char* q :
       {"Which header declares glDetachShader?", "what does frobnicate_57 return",
        "std::vector growth", "where is CMS_SignerInfo_get0_signature declared", "getUserName"}) {
    EXPECT_TRUE(NamesCodeIdentifier(q)) << q;
  }
  for (const char* q : {"When did Caroline go to the LGBTQ support group?", "my new iPhone",
                        "videos on YouTube", "a snake_", "_private", "plain words: no code",
                        "McDonald's", "", "a::", "PlayStation games"}) {
    EXPECT_FALSE(NamesCodeIdentifier(q)) << q;
  }
}

}  // namespace
}  // namespace engram
