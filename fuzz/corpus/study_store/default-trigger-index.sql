--sql
ALTER TABLE points ADD COLUMN note TEXT DEFAULT 'pad';
CREATE TRIGGER t AFTER UPDATE ON points BEGIN SELECT 1; END;
CREATE INDEX e ON points(printf('%.*c', 1000, reason));
