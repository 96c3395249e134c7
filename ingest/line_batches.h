// Decoded lines passed from the reading thread to the matching thread of an ingest.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/log_line.h"
#include "collectors/prefix/line_decoder.h"
#include "schema/store.h"

namespace gpufault {

/// Consecutive physical lines, read and decoded: what the matchers must see of them.
struct LineBatch {
    uint64_t seq = 0;               ///< 1, 2, ... in the order pushed
    uint64_t first_line = 0;        ///< number of the line at offsets[0]
    std::vector<uint64_t> offsets;  ///< byte offset of each physical line
    /// Lines cut at the maximum length, each with the number of kept lines before it.
    std::vector<std::pair<uint64_t, size_t>> truncated;
    /// A line for the matchers: one in the fixed AMD columns, decoded by the matching thread
    /// (TextPipeline::matchFixed()), or (fixed.shape.message 0) the next line of `decoded`.
    struct Kept {
        uint64_t line = 0;
        std::string_view raw;
        FixedLine fixed;
    };
    std::vector<Kept> kept;          ///< every line for the matchers, in order
    std::vector<LogLine> decoded;    ///< lines the reading thread decoded, in order
    std::deque<std::string> owned;   ///< text of kept lines that lies outside the read buffer
    uint64_t end_offset = 0;         ///< bytes consumed after the last line
    bool last = false;               ///< end of stream (the decoder's held lines included)
    std::optional<db::Error> error;  ///< read error: the stream stops here

    /// Keeps a copy of `l` whose views stay valid: text inside the read buffer (`inBuffer`)
    /// is referenced, anything else (the decoder's own buffers) copied into `owned`.
    template <typename InBuffer>
    void keep(const LogLine& l, InBuffer&& inBuffer) {
        kept.emplace_back();
        LogLine& k = decoded.emplace_back(l);
        for (std::string_view* v : {&k.text, &k.raw, &k.ident, &k.runtime_tid})
            if (!v->empty() && !inBuffer(*v)) *v = owned.emplace_back(*v);
    }
    /// Keeps line `line` (`raw`) that TextPipeline::decode() gave to its `keepFixed` with `fx`;
    /// `raw` is copied into `owned` unless it lies inside the read buffer.
    template <typename InBuffer>
    void keepFixed(uint64_t line, std::string_view raw, const FixedLine& fx, InBuffer&& inBuffer) {
        if (!inBuffer(raw)) raw = owned.emplace_back(raw);
        kept.push_back(Kept{line, raw, fx});
    }
};

/// A bounded queue of batches between the two threads, and which batches the consumer has
/// finished (the reader waits for that before it overwrites a buffer). Either side may close
/// it; then every wait returns false.
class BatchChannel {
  public:
    explicit BatchChannel(size_t capacity) : capacity_(capacity) {}
    /// Producer: appends `b` (waits while the queue is full); false when closed.
    bool push(LineBatch&& b);
    /// Consumer: the next batch (waits for one); nullopt when closed.
    std::optional<LineBatch> pop();
    /// Consumer: done with batch `seq` and every one before it.
    void done(uint64_t seq);
    /// Producer: waits until the consumer is done with batch `seq`; false when closed.
    bool waitDone(uint64_t seq);
    void close();

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<LineBatch> q_;
    size_t capacity_;
    uint64_t done_ = 0;
    bool closed_ = false;
};

}  // namespace gpufault
