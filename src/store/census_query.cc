#include "store/census_query.h"

#include <fmt/format.h>

#include "store/job_rows.h"

namespace engram::census_query {

namespace {

std::string MakeSql() {
  const auto unfinished = [](JobVocabulary v) {
    return fmt::format("sum(CASE WHEN {} THEN 1 ELSE 0 END)", job_rows::UnfinishedCondition(v));
  };
  return fmt::format(
      "SELECT 'l', workspace, count(DISTINCT user_id), count(*), 0 FROM memories "
      "WHERE kind = 'message' GROUP BY workspace "
      "UNION ALL SELECT 'm', workspace, count(DISTINCT NULLIF(user_id, '')), count(*), 0 "
      "FROM memories WHERE kind = 'memory' GROUP BY workspace "
      "UNION ALL SELECT 'e', workspace, {}, count(*), 0 FROM memory_events GROUP BY workspace "
      "UNION ALL SELECT 's', workspace, count(DISTINCT owner), count(*), 0 FROM skills "
      "GROUP BY workspace "
      "UNION ALL SELECT 't', workspace, {}, count(*), 0 FROM skill_tasks GROUP BY workspace "
      "UNION ALL SELECT 'k', workspace, count(DISTINCT kb_id), count(*), {} FROM kb_docs "
      "GROUP BY workspace",
      unfinished(JobVocabulary::kMemoryEvent), unfinished(JobVocabulary::kSkillTask),
      unfinished(JobVocabulary::kKbDocument));
}

WorkspaceCounts& Entry(std::string_view workspace, Tally* tally) {
  auto it = tally->find(workspace);
  if (it == tally->end()) {
    it = tally->emplace(std::string(workspace), WorkspaceCounts{}).first;
    it->second.workspace = std::string(workspace);
  }
  return it->second;
}

}  // namespace

const std::string& Sql() {
  static const std::string kSql = MakeSql();
  return kSql;
}

void Add(std::string_view tag, std::string_view workspace, int64_t a, int64_t b, int64_t c,
         Tally* tally) {
  WorkspaceCounts& w = Entry(workspace, tally);
  if (tag == "l") {
    w.leaderboard_users = a;
    w.leaderboard_messages = b;
  } else if (tag == "m") {
    w.memory_users = a;
    w.memories = b;
  } else if (tag == "e") {
    w.memory_events_unfinished = a;
    w.memory_events = b;
  } else if (tag == "s") {
    w.skill_owners = a;
    w.skills = b;
  } else if (tag == "t") {
    w.skill_tasks_unfinished = a;
    w.skill_tasks = b;
  } else if (tag == "k") {
    w.knowledge_bases = a;
    w.documents = b;
    w.documents_processing = c;
  }
}

void AddAcceptedEvent(std::string_view workspace, Tally* tally) {
  WorkspaceCounts& w = Entry(workspace, tally);
  ++w.memory_events;
  ++w.memory_events_unfinished;
}

std::vector<WorkspaceCounts> Finish(Tally tally) {
  std::vector<WorkspaceCounts> out;
  out.reserve(tally.size());
  for (auto& [name, counts] : tally) out.push_back(std::move(counts));
  return out;
}

Result<Tally> Count(SqlTxn& txn) {
  Tally tally;
  ENGRAM_RETURN_IF_ERROR(txn.Query(Sql(), {}, [&](const RowReader& r) {
    Add(r.Text(0), r.Text(1), r.Int(2), r.Int(3), r.Int(4), &tally);
  }));
  return tally;
}

}  // namespace engram::census_query
