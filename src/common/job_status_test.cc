#include "common/job_status.h"

#include <gtest/gtest.h>

#include <string>

namespace engram {
namespace {

constexpr JobStatus kAll[] = {JobStatus::kPending, JobStatus::kRunning, JobStatus::kSucceeded,
                              JobStatus::kFailed};

// The words are the API contracts' and the stored rows': any change here breaks clients and rows.
TEST(JobStatusTest, WordsOfEachVocabulary) {
  const auto words = [](JobVocabulary v) {
    std::string out;
    for (JobStatus s : kAll) out += std::string(JobStatusName(s, v)) + " ";
    return out;
  };
  EXPECT_EQ(words(JobVocabulary::kMemoryEvent), "PENDING RUNNING SUCCEEDED FAILED ");
  EXPECT_EQ(words(JobVocabulary::kSkillTask), "pending running completed failed ");
  EXPECT_EQ(words(JobVocabulary::kKbDocument), "PROCESSING PROCESSING SUCCESS FAIL ");
}

TEST(JobStatusTest, ParsesWhatItRenders) {
  for (JobVocabulary v : {JobVocabulary::kMemoryEvent, JobVocabulary::kSkillTask}) {
    for (JobStatus s : kAll) EXPECT_EQ(ParseJobStatus(JobStatusName(s, v), v), s);
  }
  EXPECT_EQ(ParseJobStatus("SUCCESS", JobVocabulary::kKbDocument), JobStatus::kSucceeded);
  EXPECT_EQ(ParseJobStatus("FAIL", JobVocabulary::kKbDocument), JobStatus::kFailed);
}

TEST(JobStatusTest, KbProcessingIsPending) {
  EXPECT_EQ(ParseJobStatus("PROCESSING", JobVocabulary::kKbDocument), JobStatus::kPending);
  EXPECT_EQ(JobStatusName(JobStatus::kRunning, JobVocabulary::kKbDocument), "PROCESSING");
}

TEST(JobStatusTest, RefusesOtherVocabulariesAndUnknownWords) {
  EXPECT_EQ(ParseJobStatus("pending", JobVocabulary::kMemoryEvent), std::nullopt);
  EXPECT_EQ(ParseJobStatus("SUCCEEDED", JobVocabulary::kSkillTask), std::nullopt);
  EXPECT_EQ(ParseJobStatus("completed", JobVocabulary::kKbDocument), std::nullopt);
  EXPECT_EQ(ParseJobStatus("PENDING", JobVocabulary::kKbDocument), std::nullopt);
  EXPECT_EQ(ParseJobStatus("", JobVocabulary::kMemoryEvent), std::nullopt);
  EXPECT_EQ(ParseJobStatus("PENDING ", JobVocabulary::kMemoryEvent), std::nullopt);
  EXPECT_EQ(ParseJobStatus("CANCELLED", JobVocabulary::kMemoryEvent), std::nullopt);
}

TEST(JobStatusTest, FinishedStates) {
  EXPECT_FALSE(IsFinished(JobStatus::kPending));
  EXPECT_FALSE(IsFinished(JobStatus::kRunning));
  EXPECT_TRUE(IsFinished(JobStatus::kSucceeded));
  EXPECT_TRUE(IsFinished(JobStatus::kFailed));
}

// Usable where a constant is needed (SQL text built at compile time, static tables).
static_assert(JobStatusName(JobStatus::kSucceeded, JobVocabulary::kSkillTask) == "completed");
static_assert(ParseJobStatus("FAILED", JobVocabulary::kMemoryEvent) == JobStatus::kFailed);

}  // namespace
}  // namespace engram
