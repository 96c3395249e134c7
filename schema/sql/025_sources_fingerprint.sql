-- gpufaultd looks up the file streams of a first line (Store::copyCandidates: a copytruncate
-- copy continues one of them) for every new file it identifies. Without an index each lookup
-- read every file source of the store: 3 000 new files at once on a store of 3 000 sources,
-- 9 million rows (docs/performance.md, "Session 19: many new files at once").
CREATE INDEX IF NOT EXISTS sources_fingerprint ON sources(fingerprint) WHERE kind = 'file';
