// The text pipeline: physical lines of one stream → decoder → every matcher → a Sink.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "collectors/common/log_line.h"
#include "collectors/common/simd.h"
#include "collectors/prefix/line_decoder.h"

namespace gpufault {

/// True for AMD_LOG_LEVEL=3 HIP API trace lines — the `%s %s ( %s ) %s` entry and the
/// `%s: Returned %s : ` exit of FORMATS.md §3.2 with a benign status (hipSuccess, a polled
/// hipErrorNotReady: errnames::isBenign) — which are most lines of a level-3 log and state
/// nothing any matcher records. The pipeline skips them.
bool isApiTrace(const LogLine& l);
/// The message test of isApiTrace(), for a message whose prefix is known to be level 3.
bool isApiTraceMessage(std::string_view text);

/// `[A-Za-z0-9_]`.
inline bool isIdentByte(char c) {
    const auto u = static_cast<unsigned char>(c);
    return static_cast<unsigned char>((u | 0x20) - 'a') < 26 ||
           static_cast<unsigned char>(u - '0') < 10 || u == '_';
}

/// isApiTraceMessage() with the common trace lines decided inline (an identifier of < 32
/// bytes, < 16 in a message of < 32, then `: Returned hipSuccess`, `: Returned
/// hipErrorNotReady` or ` (`; SIMD), and the common kept lines (`ArgN:`, `ShaderName :`); the
/// others by the call.
[[gnu::always_inline]] inline bool isApiTraceMessageQuick(std::string_view text) {
    if constexpr (simd::kSimd) {
        const char* p = text.data();
        const char* e = p + text.size();
        if (p < e && *p == ' ') ++p;
        if (e - p >= 16) {
            // The identifier's end among the first 32 bytes, or 16 of a shorter message.
            const bool two = e - p >= 32;
            uint32_t m = simd::identChars(simd::load16(p));
            if (two && m == 0xffff) m |= simd::identChars(simd::load16(p + 16)) << 16;
            const auto n = static_cast<size_t>(std::countr_zero(~m));
            const char* q = p + n;
            if (n == 0 || n >= (two ? 32u : 16u)) return isApiTraceMessage(text);
            if (*q == ':') {  // the exit line `%s: Returned %s : `
                if (e - q < 22)
                    return e - q >= 11 && q[1] == ' ' && q[2] == 'R' && q[9] == 'd' &&
                           q[10] == ' ' && isApiTraceMessage(text);
                alignas(16) static constexpr char kSuccess[16] = {
                    ':', ' ', 'R', 'e', 't', 'u', 'r', 'n', 'e', 'd', ' ', 'h', 'i', 'p', 'S', 'u'};
                const uint32_t same = simd::eq16(simd::load16(q), simd::load16(kSuccess));
                if ((same & 0x7ff) != 0x7ff) return false;  // not `: Returned `
                if (same == 0xffff && q[16] == 'c' && q[17] == 'c' && q[18] == 'e' &&
                    q[19] == 's' && q[20] == 's') {
                    if (!isIdentByte(q[21])) return true;
                }
                // The polled status of hipStreamQuery/hipEventQuery (errnames::isBenign()).
                alignas(16) static constexpr char kNotReady[16] = {
                    'h', 'i', 'p', 'E', 'r', 'r', 'o', 'r', 'N', 'o', 't', 'R', 'e', 'a', 'd', 'y'};
                if (e - q >= 28 && simd::startsWith(q + 11, kNotReady, 16)) {
                    if (!isIdentByte(q[27])) return true;
                }
                return isApiTraceMessage(text);  // another status: is it benign?
            }
            // The entry line `%s %s ( %s ) %s` of a hip…/__hip…/hsa… function.
            if (!((p[0] == 'h' && n >= 3 &&
                   ((p[1] == 'i' && p[2] == 'p') || (p[1] == 's' && p[2] == 'a'))) ||
                  (p[0] == '_' && n >= 5 && p[1] == '_' && p[2] == 'h' && p[3] == 'i' &&
                   p[4] == 'p')))
                return false;
            if (*q == ' ' && e - q >= 2 && q[1] == '(') {
                while (e > q + 1 && (e[-1] == ' ' || e[-1] == '\r')) --e;
                return e[-1] == ')';
            }
        }
    }
    return isApiTraceMessage(text);
}

/// isDispatchContext() for a message that is no `Arg%d`.
bool isNamedDispatchContext(std::string_view message);
/// True for the messages of HIP's dispatch context after an AMD_LOG_LEVEL prefix (`Arg%d: `,
/// `ShaderName : `, `Graph shader name : `; rocvirtual.cpp, FORMATS.md §3.3).
inline bool isDispatchContext(std::string_view m) {
    if (m.size() > 4 && m[0] == 'A' && m[1] == 'r' && m[2] == 'g')
        return m[3] >= '0' && m[3] <= '9';
    return isNamedDispatchContext(m);
}

/// All text matchers, in a fixed order (kernel log first, then runtime log).
std::vector<std::unique_ptr<Matcher>> makeTextMatchers();

/// The pure per-line classification of TextPipeline::decode() (LineDecoder::classifyBare() with
/// the pipeline's trace test), with its own shape cache: one per thread, any number of threads.
class LineClassifier {
  public:
    /// What decode() does with `raw` while TextPipeline::decoderQuiet(): Drop (nothing at all),
    /// Fixed (`fx` to matchFixed()), Other (decode() must see it). `mayHaveCr` as for decode().
    [[gnu::always_inline]] LineDecoder::Class classify(std::string_view raw,
                                                       FixedLine& fx,
                                                       bool mayHaveCr) {
        return LineDecoder::classifyBare(
            shapes_,
            raw,
            fx,
            [](std::string_view m) { return isApiTraceMessageQuick(m); },
            mayHaveCr);
    }

  private:
    AmdShapeCache shapes_;
};

/// Runs one stream of text through the line decoder and all matchers. Pure: the caller owns
/// I/O and feeds lines; records go to `out` as soon as they are complete.
class TextPipeline {
  public:
    explicit TextPipeline(Sink& out);
    /// One physical line, without its '\n'; `line_no` is 1-based. `mayHaveCr` false: the
    /// caller knows that `raw` holds no '\r'.
    void feedLine(uint64_t line_no, std::string_view raw, bool mayHaveCr = true);
    /// End of stream: flush blocks in progress.
    void finish();
    /// The stream went quiet, more may come (gpufaultd): as finish(), but the records held
    /// for folding are published and stay held (Matcher::quiet()): folds close at the same
    /// lines as in a reader that never waited (`gpufault ingest`, gpufaultd after a restart).
    void quiet();

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
        auto skip = [](std::string_view m) { return isApiTraceMessageQuick(m); };
        switch (decoder_.feedBare(line_no, raw, bare_, fixed_, skip, mayHaveCr)) {
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
    /// ownsDispatchLines(), idle()). A matcher's idle() changes only when it is fed or
    /// finished, so it is asked then and kept as a bit (`busy_`), not asked for every line.
    void match(const LogLine& l) {
        if (l.line >= foldCheck_) closeFolds(l.line);
        uint64_t take = all_;
        if (l.amd_level) take = (isDispatchContext(l.text) ? owner_ : ~kernelOnly_ & all_) | busy_;
        for (; take != 0; take &= take - 1) {
            const auto i = static_cast<size_t>(std::countr_zero(take));
            Matcher& m = *matchers_[i];
            m.feed(l, out_);
            if (out_.ended) closeProcesses();
            if (skippable_ >> i & 1)
                busy_ = (busy_ & ~(uint64_t{1} << i)) | uint64_t{!m.idle()} << i;
        }
    }
    /// Matcher half of feedLine() for a line decode() gave to `keepFixed` (line `line_no`):
    /// decoded here, then matched unless it is an API trace line.
    void matchFixed(uint64_t line_no, std::string_view raw, const FixedLine& fx) {
        LineDecoder::fillFixed(line_no, raw, fx, filled_);
        if (fx.check_trace && isApiTraceMessageQuick(filled_.text)) return;
        match(filled_);
    }
    /// Whether the decoder is settled (LineDecoder::quiet()): then a line LineClassifier calls
    /// Drop may be left out of feedLine() and a Fixed one given to matchFixed() directly.
    bool decoderQuiet() const { return decoder_.quiet(); }
    /// Matcher half of finish().
    void matchFinish() {
        for (auto& m : matchers_) {
            m->finish(out_);
            if (out_.ended) closeProcesses();
        }
        refreshBusy();
    }
    /// Emits the records held for folding kFoldLines or more before line `next`
    /// (Matcher::closeFolded()), as match() does before it matches a line `next`. A checkpoint
    /// calls it with the line after the last one fed while decoderQuiet() (no line before
    /// `next` can still come), so when it is called does not change what is stored.
    void closeFolds(uint64_t next);
    /// The matchers (to ask where their open blocks start).
    const std::vector<std::unique_ptr<Matcher>>& matchers() const { return matchers_; }

  private:
    /// Passes everything to the caller's sink and notes the records that end a process
    /// (endsProcess()), for closeProcesses().
    struct Watch final : Sink {
        explicit Watch(Sink& s) : to(s) {}
        void evidence(Evidence&& e) override {
            if (endsProcess(e)) {
                ended = true;
                ends.push_back({e.line, e.pid, e.rank});
            }
            to.evidence(std::move(e));
        }
        void dispatch(Dispatch&& d) override { to.dispatch(std::move(d)); }
        void operand(Operand&& o) override { to.operand(std::move(o)); }
        void warning(Warning&& w) override { to.warning(std::move(w)); }
        void context(const Evidence& e) override { to.context(e); }
        void runBoundary(uint64_t line, std::optional<int64_t> rank) override {
            ended = true;
            ends.push_back({line, std::nullopt, rank});
        }
        bool takesPendingArgs() const override { return to.takesPendingArgs(); }
        struct End {
            uint64_t line;
            std::optional<int64_t> pid, rank;
        };
        Sink& to;
        bool ended = false;
        std::vector<End> ends;
    };
    /// Matcher::closeProcess() on every matcher for each record noted by `out_`: right after
    /// the matcher that emitted it, so before any later line is matched (a fault's block ends
    /// at a line before the matchers that fold see that line): a fixed input position.
    void closeProcesses();
    Watch out_;
    LineDecoder decoder_;
    LogLine bare_;     ///< reused by feedBareAmd(), which sets the same fields each time
    FixedLine fixed_;  ///< decoder half: the last Bare::Fixed line's shape
    LogLine filled_;   ///< matcher half: reused by matchFixed() (fillFixed() sets the same fields)
    /// Sets `busy_` from every matcher's idle().
    void refreshBusy();
    std::vector<std::unique_ptr<Matcher>> matchers_;
    // Bit i for matcher i (at most 64): all of them, kernelLogOnly(), ownsDispatchLines(),
    // those match() may skip (not an owner, or kernel-log only), and those not idle().
    uint64_t all_ = 0, kernelOnly_ = 0, owner_ = 0, skippable_ = 0, busy_ = 0;
    /// The line from which match() calls closeFolds(): the first fold due, or a look every
    /// kFoldCheck lines (a record held since is at most a few lines older than the line matched
    /// when it was held).
    static constexpr uint64_t kFoldCheck = 1024;
    uint64_t foldCheck_ = kFoldCheck;
};

}  // namespace gpufault
