// Lines passed from the reading thread to the matching thread of an ingest, classified on
// either thread in between (docs/performance.md, "Seventh round").
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/pipeline.h"
#include "collectors/prefix/line_decoder.h"
#include "ingest/long_line.h"
#include "schema/store.h"

namespace gpufault {

/// Consecutive physical lines as read (stage 1, in order), then classified (stage 2, any
/// thread: classify()), then decoded, matched and stored (stage 3, in order).
struct LineBatch {
    uint64_t seq = 0;            ///< 1, 2, ... in the order pushed
    uint64_t first_line = 0;     ///< number of the first line
    uint64_t first_offset = 0;   ///< byte offset of the first line
    const char* base = nullptr;  ///< the first line's first byte in the read buffer (!owns)
    /// Where each line ends (its '\n', or the end of the text), counted from its first byte.
    std::vector<uint32_t> ends;
    std::string owned;        ///< the text of a one-line batch from outside the read buffer
    bool owns = false;        ///< the text is `owned` (then the batch has one line)
    bool cut = false;         ///< the one line was cut at LineDecoder::kMaxLine by the reader
    /// the one line has no '\n' and ends a file (StreamIngest::matchBatch: stored, but the
    /// checkpoint stays at its start)
    bool unended = false;
    uint64_t end_offset = 0;  ///< bytes consumed after the last line
    bool last = false;        ///< end of stream
    std::optional<db::Error> error;  ///< read error: the stream stops here

    /// A line that is not LineDecoder::Class::Drop (stage 2's result), in order.
    struct Kept {
        uint32_t index = 0;  ///< line `first_line + index`
        LineDecoder::Class cls = LineDecoder::Class::Other;
        bool truncated = false;  ///< over kMaxLine: cut, with a warning (always Other)
        bool may_cr = true;      ///< the line may hold a '\r'
        FixedLine fixed;         ///< cls Fixed: for TextPipeline::matchFixed()
    };
    std::vector<Kept> kept;
    bool claimed = false;     ///< BatchChannel: a thread has taken stage 2 (under its lock)
    bool classified = false;  ///< BatchChannel: stage 2 is done, `kept` is final

    size_t lines() const { return ends.size(); }
    /// The text the line ends count from.
    const char* text() const { return owns ? owned.data() : base; }
    /// Line `i`'s first byte, counted from text().
    size_t lineStart(size_t i) const { return i == 0 ? 0 : size_t{ends[i - 1]} + 1; }
    /// Line `i` as the decoder sees it: without its '\n', cut at LineDecoder::kMaxLine
    /// (cutLongLine()).
    std::string_view line(size_t i) const {
        const size_t s = lineStart(i);
        return cutLongLine(std::string_view(text() + s, ends[i] - s));
    }
    /// Byte offset of line `i`.
    uint64_t offsetOf(size_t i) const { return first_offset + (owns ? 0 : lineStart(i)); }
};

/// Stage 2: fills `b.kept` with every line of `b` that `c` does not call Drop. Pure apart from
/// `c`'s cache; any thread.
void classify(LineBatch& b, LineClassifier& c);

/// A bounded queue of batches between the reading thread (producer) and the matching thread
/// (consumer), with stage 2 claimed batch by batch: whichever thread would otherwise wait
/// classifies the oldest batch nobody has claimed. It also records which batches the consumer
/// has finished (the reader waits for that before it overwrites a buffer). Either side may
/// close it; then every wait returns false.
class BatchChannel {
  public:
    explicit BatchChannel(size_t capacity) : capacity_(capacity) {}
    /// Producer: appends `b` (unclassified). While the queue is full it classifies unclaimed
    /// batches with `c`, or waits. False when closed.
    bool push(LineBatch&& b, LineClassifier& c);
    /// Consumer: the next batch, classified (by `c` here when no other thread has claimed it;
    /// while another thread classifies it, later unclaimed batches are classified here).
    /// nullopt when closed.
    std::optional<LineBatch> pop(LineClassifier& c);
    /// Consumer: done with batch `seq` and every one before it.
    void done(uint64_t seq);
    /// Producer: waits until the consumer is done with batch `seq`, classifying unclaimed
    /// batches with `c` meanwhile; false when closed.
    bool waitDone(uint64_t seq, LineClassifier& c);
    void close();
    /// Batches classified by the producer and by the consumer so far (for the benchmarks).
    std::pair<uint64_t, uint64_t> classifiedBy() const;

  private:
    /// Classifies the oldest unclaimed batch with `c` (the lock is released meanwhile); false
    /// when there is none.
    bool classifyOne(std::unique_lock<std::mutex>& lock, LineClassifier& c, uint64_t& count);

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<LineBatch> q_;  ///< references stay valid while other batches come and go
    size_t capacity_;
    uint64_t done_ = 0;
    uint64_t byProducer_ = 0, byConsumer_ = 0;
    bool closed_ = false;
};

}  // namespace gpufault
