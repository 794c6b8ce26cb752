-- Reports, built only on the current-state view: every aggregate counts each
-- record once, at its latest version, tombstones excluded. Nothing reads raw
-- versions.
CREATE VIEW IF NOT EXISTS report_campaign_project AS
SELECT detect_id, project_id, unit,
  count() AS results, avg(result) AS mean_result, min(result) AS min_result, max(result) AS max_result
FROM fitness_result_current
GROUP BY detect_id, project_id, unit;

CREATE VIEW IF NOT EXISTS report_school_grade AS
SELECT detect_id, project_id, school_id, grade, unit,
  count() AS results, avg(result) AS mean_result, min(result) AS min_result, max(result) AS max_result
FROM fitness_result_current
GROUP BY detect_id, project_id, school_id, grade, unit;

-- Events the consumer could never write: kept for listing and investigation
-- (the message itself also goes to the dead-letter topic).
CREATE TABLE IF NOT EXISTS dead_letters (
  dead_unix_ms  Int64,
  message_id    String,
  event_id      String,
  reason        String,
  payload       String
) ENGINE = MergeTree
ORDER BY dead_unix_ms;
