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
/// `%s: Returned %s : ` exit of FORMATS.md §3.2 with a benign status (hipSuccess, a polled
/// hipErrorNotReady: errnames::isBenign) — which are most lines of a level-3 log and state
/// nothing any matcher records. The pipeline skips them.
bool isApiTrace(const LogLine& l);
/// The message test of isApiTrace(), for a message whose prefix is known to be level 3.
bool isApiTraceMessage(std::string_view text);

/// True for the messages of HIP's dispatch context after an AMD_LOG_LEVEL prefix (`Arg%d: `,
/// `ShaderName : `, `Graph shader name : `; rocvirtual.cpp, FORMATS.md §3.3).
bool isDispatchContext(std::string_view message);

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

    /// Decoder half of feedLine(). `keep` gets lines whose views die when it returns;
    /// `keepFixed(raw, fx)` gets the kept lines in the fixed AMD columns undecoded, for
    /// matchFixed() (`fx` dies when it returns). `mayHaveCr` false: the caller knows that `raw`
    /// holds no '\r'.
    template <typename Keep, typename KeepFixed>
    void decode(uint64_t line_no,
                std::string_view raw,
                Keep&& keep,
                KeepFixed&& keepFixed,
                bool mayHaveCr = true) {
        switch (decoder_.feedBare(line_no, raw, bare_, fixed_, isApiTraceMessage, mayHaveCr)) {
            case LineDecoder::Bare::Skipped:
                return;
            case LineDecoder::Bare::Fixed:
                keepFixed(raw, fixed_);
                return;
            case LineDecoder::Bare::Filled:
                if (!isApiTrace(bare_)) keep(bare_);
                return;
            case LineDecoder::Bare::No:
                break;
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
    /// Matcher half of feedLine(): one kept line to every matcher that can use it (a line with
    /// an AMD_LOG_LEVEL prefix skips idle kernel-log matchers; a HIP dispatch-context line
    /// skips every idle matcher but the one that owns it: Matcher::kernelLogOnly(),
    /// ownsDispatchLines(), idle()).
    void match(const LogLine& l) {
        if (!l.amd_level) {
            for (auto& m : matchers_) m->feed(l, out_);
            return;
        }
        const bool dispatchLine = isDispatchContext(l.text);
        for (size_t i = 0; i < matchers_.size(); ++i) {
            Matcher& m = *matchers_[i];
            const bool skippable = dispatchLine ? !owner_[i] : kernelOnly_[i];
            if (!skippable || !m.idle()) m.feed(l, out_);
        }
    }
    /// Matcher half of feedLine() for a line decode() gave to `keepFixed` (line `line_no`):
    /// decoded here, then matched unless it is an API trace line.
    void matchFixed(uint64_t line_no, std::string_view raw, const FixedLine& fx) {
        LineDecoder::fillFixed(line_no, raw, fx, filled_);
        if (fx.check_trace && isApiTraceMessage(filled_.text)) return;
        match(filled_);
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
    FixedLine fixed_;  ///< decoder half: the last Bare::Fixed line's shape
    LogLine filled_;   ///< matcher half: reused by matchFixed() (fillFixed() sets the same fields)
    std::vector<std::unique_ptr<Matcher>> matchers_;
    std::vector<char> kernelOnly_, owner_;  ///< per matcher: kernelLogOnly(), ownsDispatchLines()
};

}  // namespace gpufault
