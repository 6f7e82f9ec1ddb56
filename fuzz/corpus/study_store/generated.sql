--sql
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'reason TEXT NOT NULL', 'reason TEXT GENERATED ALWAYS AS (printf(''%.*c'', 400000000, ''x''))') WHERE name = 'points';
