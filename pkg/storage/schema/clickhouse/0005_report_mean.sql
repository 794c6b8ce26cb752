-- The report mean, the same on every ClickHouse version: avg() of a Decimal
-- is a Decimal at the argument's scale on 18.16 (3.116) and a Float64 on
-- current releases (3.1164102564102563). sum / count divides the exact
-- Decimal sum by an integer on both: Decimal(38, 3), truncated to the
-- storage scale (test/chconform TestEnginesAgree). DROP TABLE, not DROP VIEW:
-- 18.16 drops views only that way.
DROP TABLE IF EXISTS report_campaign_project;

CREATE VIEW report_campaign_project AS
SELECT detect_id, project_id, unit,
  count() AS results, sum(result) / count() AS mean_result, min(result) AS min_result, max(result) AS max_result
FROM fitness_result_current
GROUP BY detect_id, project_id, unit;

DROP TABLE IF EXISTS report_school_grade;

CREATE VIEW report_school_grade AS
SELECT detect_id, project_id, school_id, grade, unit,
  count() AS results, sum(result) / count() AS mean_result, min(result) AS min_result, max(result) AS max_result
FROM fitness_result_current
GROUP BY detect_id, project_id, school_id, grade, unit;
