// The text pipeline: physical lines of one stream → decoder → every matcher → a Sink.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "collectors/common/log_line.h"
#include "collectors/prefix/line_decoder.h"

namespace gpufault {

/// True for AMD_LOG_LEVEL=3 HIP API trace lines — the `%s %s ( %s ) %s` entry and the
/// `%s: Returned hipSuccess : ` exit of FORMATS.md §3.2 — which are most lines of a level-3 log
/// and state nothing any matcher records. The pipeline skips them.
bool isApiTrace(const LogLine& l);

/// All text matchers, in a fixed order (kernel log first, then runtime log).
std::vector<std::unique_ptr<Matcher>> makeTextMatchers();

/// Runs one stream of text through the line decoder and all matchers. Pure: the caller owns
/// I/O and feeds lines; records go to `out` as soon as they are complete.
class TextPipeline {
  public:
    explicit TextPipeline(Sink& out);
    /// One physical line, without its '\n'; `line_no` is 1-based.
    void feedLine(uint64_t line_no, std::string_view raw);
    /// End of stream: flush blocks in progress.
    void finish();

    // feedLine() and finish() in two halves, which may run on two threads (one each): the
    // decoder half calls `keep` for each line the matchers must see (API trace lines are
    // dropped); the matcher half gets those lines in the same order.

    /// Decoder half of feedLine(). `keep` gets lines whose views die when it returns.
    template <typename Keep>
    void decode(uint64_t line_no, std::string_view raw, Keep&& keep) {
        if (decoder_.feedBareAmd(line_no, raw, bare_)) {
            if (!isApiTrace(bare_)) keep(bare_);
            return;
        }
        decoder_.feed(line_no, raw, [&keep](const LogLine& l) {
            if (!isApiTrace(l)) keep(l);
        });
    }
    /// Decoder half of finish(): the lines the decoder still holds, all kept.
    template <typename Keep>
    void decodeFinish(Keep&& keep) {
        decoder_.finish([&keep](const LogLine& l) { keep(l); });
    }
    /// Matcher half of feedLine(): one kept line to every matcher.
    void match(const LogLine& l) {
        for (auto& m : matchers_) m->feed(l, out_);
    }
    /// Matcher half of finish().
    void matchFinish() {
        for (auto& m : matchers_) m->finish(out_);
    }
    /// The matchers (to ask where their open blocks start).
    const std::vector<std::unique_ptr<Matcher>>& matchers() const { return matchers_; }

  private:
    Sink& out_;
    LineDecoder decoder_;
    LogLine bare_;  ///< reused by feedBareAmd(), which sets the same fields each time
    std::vector<std::unique_ptr<Matcher>> matchers_;
};

}  // namespace gpufault
