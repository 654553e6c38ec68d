-- Listing a workspace's skill tasks, newest first (GET …/skills/tasks).
CREATE INDEX skill_tasks_by_time ON skill_tasks(workspace, created_at, id);
