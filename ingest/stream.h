// One input stream's lines → parsers → the open store transaction, with its checkpoint.
// Shared by `gpufault ingest` (a whole file) and gpufaultd (tailed files, /dev/kmsg).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/pipeline.h"
#include "ingest/ingest.h"
#include "ingest/line_batches.h"
#include "ingest/line_positions.h"
#include "ingest/store_sink.h"
#include "schema/store.h"

namespace gpufault {

/// A source's fingerprint: FNV-1a of its first line (through the first '\n', at most the
/// first 4 KiB), with the byte count ("<16 hex>-<n>"). A growing file keeps it, so a file is
/// recognised again after it grew; a file replaced under the same inode gets a new one.
/// `head` = the stream's first bytes (up to 4 KiB).
std::string sourceFingerprint(std::string_view head);

/// Feeds the lines of one source through every matcher into the store's open transaction and
/// computes where a restarted reader must begin so that no block is lost or duplicated: the
/// start of the oldest block a parser has not finished, or of the oldest dispatch still held
/// for a fault's context window. Positions are opaque to this class: byte offsets for files,
/// sequence numbers for /dev/kmsg. Not thread-safe; one per source.
class StreamIngest {
  public:
    /// `state` is the source's committed checkpoint; lines are numbered from state.line + 1.
    /// When state.unended, what the source stored from line state.line + 1 on (a last line
    /// without its newline) is deleted before the first line is stored (the line read again).
    StreamIngest(Store& store, const SourceState& state, int window, IngestSummary& summary);
    StreamIngest(const StreamIngest&) = delete;
    StreamIngest& operator=(const StreamIngest&) = delete;

    /// One line (without '\n') that starts at `position`; `truncated` when it was cut at
    /// LineDecoder::kMaxLine bytes; `unended`: it has no newline and ends a file that may
    /// still grow (stored as matchBatch() stores a LineBatch::unended line).
    void feed(std::string_view line, int64_t position, bool truncated, bool unended = false);
    /// A warning about the line fed last (stored with the source's records, e.g. "the last
    /// line of a rotated file had no newline").
    void warnLast(std::string message);
    /// End of stream: completes open blocks and writes every dispatch window. `mayGrow`: the
    /// stream ends only for now (`gpufault ingest` of a file: a job may still write to it). Its
    /// unfinished blocks, folds and dispatch windows are stored as at an end, but the next
    /// checkpoint() goes where a reader that went on would resume (the start of the oldest of
    /// them, as for a stream not complete) with SourceState::unended: the next reader replaces
    /// the rows stored from there on (a fold's count, a block's record) instead of adding to them.
    void finish(bool mayGrow = false);

    // The same for `gpufault ingest`, whose reading thread splits the lines into batches that
    // either thread classifies (LineBatch, BatchChannel); these two take them in order.
    /// One classified batch (LineBatch::unended: its line has no newline and ends the file;
    /// its records are stored, its dispatches not counted, and checkpoints stay at its start,
    /// with SourceState::unended: the reader of the whole line replaces its rows). Its lines
    /// through the decoder (those classified Drop only while
    /// the decoder is not quiet), the matchers and the store, with the truncation warnings
    /// where feed() has them, positions and counts; the same records as feed() of each line.
    void matchBatch(const LineBatch& b);
    /// End of a batched stream: the decoder's held lines, the matchers' open blocks and every
    /// dispatch window (finish(), with `mayGrow` as there).
    void finishBatched(bool mayGrow = false);
    /// The stream went quiet: completes open blocks (a fault line at the end of a live log
    /// must not wait for the next line to be stored) and publishes folded records with their
    /// count so far, which stay open (TextPipeline::quiet()); the dispatch windows stay held.
    void flushIdle();
    /// Writes pending dispatch counts and the checkpoint into the open transaction.
    /// `end` is the position just after the last fed line; `complete` marks the stream done;
    /// `size` is recorded with it (bytes, or 0). `adjust`, when given, may rewrite the
    /// computed checkpoint before it is written (the journal turns a position into a cursor).
    /// The caller commits, then calls committed().
    db::Result<void> checkpoint(int64_t end,
                                bool complete,
                                int64_t size,
                                const std::function<void(SourceState&)>& adjust = {});
    /// The transaction holding the last checkpoint() was committed.
    void committed() {
        state_ = pending_;
        written_ = false;
    }
    /// checkpoint()'s error when another writer (a second `gpufault ingest`, gpufaultd) moved
    /// the source's checkpoint since this stream read it: roll back and stop (or start again
    /// from the store's checkpoint), else its lines are counted twice.
    static constexpr const char* kConflict =
        "another ingest or gpufaultd is writing this source; nothing of this batch was stored";
    /// checkpoint() failed with kConflict.
    bool conflicted() const { return conflict_; }

    /// Lines fed since the last checkpoint().
    uint64_t uncommittedLines() const { return uncommitted_; }
    uint64_t lineNo() const { return lineNo_; }
    /// held_dispatches rows written by the checkpoints so far (StoreSink::persistHeld()).
    uint64_t heldRowsWritten() const { return heldRows_; }
    /// The committed checkpoint.
    const SourceState& state() const { return state_; }
    /// What the source's row holds as far as this stream knows: its last checkpoint() (not
    /// committed yet: a rollback discards this stream) or the committed one; nullopt when its
    /// state was not read from the store. A stream built to replace this one on the same row
    /// (gpufaultd: a truncated file's new numbering, a copy continuing a finished stream)
    /// starts with this as its SourceState::stored, so its compare-and-swap expects this
    /// stream's own write, not another writer's.
    std::optional<StoredPosition> expectedPosition() const {
        return written_ ? pending_.stored : state_.stored;
    }
    /// Lines through `line` will be fed before the next checkpoint(): the rows an earlier
    /// reader stored for them past its checkpoint are replaced in one pass now (else at each
    /// line fed). Only while replacing(); every line through `line` must be fed before the
    /// next checkpoint().
    void replaceThrough(uint64_t line) { replaceUnended(line); }
    /// Rows stored past the checkpoint by an earlier reader remain to be replaced.
    bool replacing() const { return replaceFrom_.has_value(); }
    /// replaceThrough() deleted rows of lines not fed yet: they must be fed before a checkpoint.
    bool replacedAhead() const { return deletedThrough_ > lineNo_; }
    /// The first store error a record met (the transaction must then be rolled back).
    const std::optional<db::Error>& error() const { return error_ ? error_ : sink_.error(); }

  private:
    static constexpr size_t kRemembered = 65536;  ///< line positions kept for checkpoints
    /// Where a stream that goes on resumes: the first line of the oldest open block (folds
    /// included), or earlier that of the oldest held dispatch or pending context, clamped to the
    /// remembered positions; lineNo() + 1 when nothing is open or held.
    uint64_t openResumeLine() const;
    /// Before the last line without its newline (`line`) is matched: its records get attr
    /// `unended=1` (StoreSink::markUnended), and so do the blocks open now that it continues
    /// (their records are completed at the end with what it said so far). Returns those
    /// blocks' first lines per matcher (0: none), for unendedAfter().
    std::vector<uint64_t> unendedBefore(uint64_t line);
    /// After that line was matched: the blocks it continued (still open since the same line).
    void unendedAfter(const std::vector<uint64_t>& open);
    /// finish(true)'s openResumeLine(), taken before the open blocks were completed.
    std::optional<uint64_t> endResume_;
    /// Before lines through `through` are stored: the rows that an earlier reader stored for
    /// them past its checkpoint (SourceState::unended), read again now, are deleted; the rows
    /// of lines not read yet stay until they are (a checkpoint committed before then must not
    /// leave them deleted: the row's max_line says they are stored).
    void replaceUnended(uint64_t through);
    /// The first line whose rows stored past the checkpoint were not replaced yet; nullopt
    /// once all were (or none were stored).
    std::optional<uint64_t> replaceFrom_;
    /// The earlier reader's last whole line (its max_line): replacing through it replaces
    /// everything (its cut last line's rows, one line further, go with it).
    uint64_t replaceTo_ = 0;
    /// The last line up to replaceTo_ whose earlier rows replaceUnended() deleted: lines up to
    /// it must be fed before a checkpoint (its max_line says they are stored).
    uint64_t deletedThrough_ = 0;
    /// This stream's last line has no newline: its number and where it starts.
    std::optional<std::pair<uint64_t, int64_t>> unended_;
    /// The first line of the oldest block that was open when the unended line came: that line
    /// may have ended it only because it was cut (a continuation read as something else), so a
    /// resume starts there and the block is read again whole.
    std::optional<uint64_t> unendedOpen_;
    std::optional<db::Error> error_;  ///< replaceUnended()'s
    Store& store_;
    SourceState state_, pending_;
    IngestSummary& sum_;
    StoreSink sink_;
    TextPipeline pipe_;
    LinePositions positions_{kRemembered};  ///< where the recent lines start
    uint64_t lineNo_ = 0, uncommitted_ = 0, heldRows_ = 0;
    bool conflict_ = false;
    /// a checkpoint was written since the last commit (`pending_`, not committed yet; a
    /// rollback discards this stream)
    bool written_ = false;
};

}  // namespace gpufault
