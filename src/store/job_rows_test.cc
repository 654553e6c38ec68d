// job_rows: how job rows hold their status, the same on every backend.
#include "store/job_rows.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

// The claims and leases find unfinished jobs with these exact conditions: the words are the
// stored rows' and the partial indexes of the migrations name them the same way.
TEST(JobRowsTest, UnfinishedConditionsNameTheStoredWords) {
  EXPECT_EQ(job_rows::UnfinishedCondition(JobVocabulary::kMemoryEvent),
            "status IN ('PENDING', 'RUNNING')");
  EXPECT_EQ(job_rows::UnfinishedCondition(JobVocabulary::kSkillTask),
            "status IN ('pending', 'running')");
  EXPECT_EQ(job_rows::UnfinishedCondition(JobVocabulary::kKbDocument), "status = 'PROCESSING'");
}

TEST(JobRowsTest, ReadsKnownWordsAndUnknownOnesAsFailed) {
  EXPECT_EQ(job_rows::ReadStatus("RUNNING", JobVocabulary::kMemoryEvent, "me-1"),
            JobStatus::kRunning);
  EXPECT_EQ(job_rows::ReadStatus("completed", JobVocabulary::kSkillTask, "st-1"),
            JobStatus::kSucceeded);
  EXPECT_EQ(job_rows::ReadStatus("PROCESSING", JobVocabulary::kKbDocument, "d-1"),
            JobStatus::kPending);
  EXPECT_EQ(job_rows::ReadStatus("PAUSED", JobVocabulary::kMemoryEvent, "me-2"),
            JobStatus::kFailed);
  // Another vocabulary's word is unknown too.
  EXPECT_EQ(job_rows::ReadStatus("pending", JobVocabulary::kMemoryEvent, "me-3"),
            JobStatus::kFailed);
  EXPECT_EQ(job_rows::ReadStatus("", JobVocabulary::kKbDocument, "d-2"), JobStatus::kFailed);
}

TEST(JobRowsTest, StoredWordsAreTheVocabularysWords) {
  EXPECT_EQ(job_rows::StoredWord(JobStatus::kSucceeded, JobVocabulary::kMemoryEvent), "SUCCEEDED");
  EXPECT_EQ(job_rows::StoredWord(JobStatus::kFailed, JobVocabulary::kSkillTask), "failed");
  EXPECT_EQ(job_rows::StoredWord(JobStatus::kRunning, JobVocabulary::kKbDocument), "PROCESSING");
}

}  // namespace
}  // namespace engram
