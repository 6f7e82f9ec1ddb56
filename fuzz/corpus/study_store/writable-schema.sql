--sql
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'id INTEGER PRIMARY KEY', 'id INTEGER') WHERE name = 'points';
UPDATE sqlite_schema SET sql = replace(sql, 'twinscale_version TEXT NOT NULL', 'twinscale_version TEXT NOT NULL DEFAULT (printf(''%.*c'', 9000000, ''v''))') WHERE name = 'points';
