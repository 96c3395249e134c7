#include "collectors/kernel_log/amdgpu_fault.h"

#include <algorithm>
#include <string>
#include <vector>

#include "collectors/common/text.h"
#include "collectors/common/wrapped_line.h"
#include "collectors/kernel_log/amdgpu_fault_lines.h"
#include "collectors/kernel_log/amdgpu_fault_order.h"
#include "collectors/kernel_log/amdgpu_line.h"
#include "collectors/kernel_log/amdgpu_wrap.h"

namespace gpufault {

namespace {

using amdgpu::Direction;
using amdgpu::FaultStage;
constexpr auto npos = std::string_view::npos;

constexpr size_t kMaxDevices = 16;  // blocks in progress at once (one per device)
// Lines after a radeon device line within which a bare `VM fault (…)` line is its decode line.
constexpr uint64_t kRadeonDecodeLines = 2;
// Lines without one of its own after which a block ends.
constexpr uint64_t kMaxGap = amdgpu::DirectionProbe::kMaxGapLines;

int stageIndex(FaultStage s) {
    return static_cast<int>(s);
}

// One fault block in progress: the lines of one device that belong together.
struct Block {
    std::string key;
    Evidence ev;
    uint64_t touched = 0;  // feed counter at its last line
    int lines = 0;
    int last_stage = -1;  // stage of its latest line in file order
    uint32_t seen = 0;    // bit per stage
    bool header = false;
    bool fault_field = false;  // a line beyond the task line stated something
    uint64_t first_line = 0;   // its first line in file order
};

// The count of a printk_ratelimit `gmc_v10_0_process_interrupt: 41 callbacks suppressed` line.
std::optional<std::string_view> suppressedCount(std::string_view text) {
    size_t p = text.find(" callbacks suppressed");
    if (p == npos) return std::nullopt;
    if (text.find("gmc_") == npos && text.find("process_interrupt") == npos &&
        !amdgpu::splitDeviceLine(text))
        return std::nullopt;
    size_t b = p;
    while (b > 0 && text[b - 1] >= '0' && text[b - 1] <= '9') --b;
    if (b == p) return std::nullopt;
    return text.substr(b, p - b);
}

class AmdgpuFaultMatcher final : public Matcher {
  public:
    void feed(const LogLine& line, Sink& out) override;
    void finish(Sink& out) override;
    bool kernelLogOnly() const override { return true; }
    bool idle() const override {
        return blocks_.empty() && !held_ && probe_.empty() && !wrapped_.holding();
    }
    /// The first line of the oldest block in progress, of the held record or of the lines held
    /// while the direction is not known.
    std::optional<uint64_t> openSince() const override {
        std::optional<uint64_t> first = probe_.firstLine();
        if (held_ && (!first || held_->line < *first)) first = held_->line;
        if (wrapped_.holding() && (!first || wrapped_.lineNumber() < *first))
            first = wrapped_.lineNumber();
        for (const auto& b : blocks_)
            if (!first || b.first_line < *first) first = b.first_line;
        return first;
    }

  private:
    void feedWhole(const LogLine& line, Sink& out);
    void feedLine(const LogLine& line, Sink& out);
    void step(const LogLine& line, Sink& out);
    void decide(Direction d, Sink& out);
    void closeAll(Sink& out);
    void settle(bool gap, Sink& out);
    bool joins(const Block& b, FaultStage s) const;
    bool startsRun(const LogLine& line) const;
    void add(Block& b, FaultStage s, std::string_view body, const LogLine& line);
    void close(size_t i, Sink& out);
    void flushHeld(Sink& out);
    size_t find(std::string_view key) const;

    std::vector<Block> blocks_;
    Direction dir_ = Direction::Unknown;
    amdgpu::DirectionProbe probe_;           // lines held until dir_ is known
    std::optional<std::string> suppressed_;  // count waiting for the next record
    std::optional<Evidence> held_;           // newest-first input: a record whose suppression
                                             // line may come next
    std::optional<Warning> held_warning_;    // its cut-block warning, emitted with it
    uint64_t seq_ = 0;
    uint64_t last_block_seq_ = 0;  // feed counter at the last block line stepped
    std::string radeonKey_;        // the BDF of the last radeon device line
    uint64_t radeonSeq_ = 0;       // its feed counter (0: none)
    std::string radeonLine_;       // a bare radeon decode line with its device put in front
    WrappedLine wrapped_;          // a line wrapped by hand or a mail client, until its rest
};

size_t AmdgpuFaultMatcher::find(std::string_view key) const {
    for (size_t i = 0; i < blocks_.size(); ++i)
        if (blocks_[i].key == key) return i;
    return npos;
}

// Whether a line of stage `s` continues block `b` (else `b` ends and `s` starts a new block),
// once the direction of the input is known: stages rise going forward (lines may be missing:
// `grep fault` keeps the header, status and *_FAULTS lines) and fall newest first, where the
// header is a block's last line.
bool AmdgpuFaultMatcher::joins(const Block& b, FaultStage s) const {
    int si = stageIndex(s);
    if (b.seen & (1u << si)) return false;
    if (dir_ == Direction::Reverse) return si < b.last_stage;
    return s != FaultStage::Header && si > b.last_stage;
}

void AmdgpuFaultMatcher::add(Block& b, FaultStage s, std::string_view body, const LogLine& line) {
    if (b.lines++ == 0) b.first_line = line.line;
    b.touched = seq_;
    b.last_stage = stageIndex(s);
    b.seen |= 1u << stageIndex(s);
    bool stated = amdgpu::applyFaultLine(s, body, b.ev);
    if (s == FaultStage::Header) {
        b.header = true;
        b.ev.line = line.line;
        b.ev.time = line.time;
        if (line.rank) b.ev.rank = line.rank;
    } else {
        if (stated && s != FaultStage::Task) b.fault_field = true;
        // Newest first, a block without its header takes the time of its oldest line, as it
        // does read forward.
        if (dir_ == Direction::Reverse && !b.header && !line.time.empty()) b.ev.time = line.time;
    }
    amdgpu::appendRaw(b.ev.raw, line.raw);
}

void AmdgpuFaultMatcher::flushHeld(Sink& out) {
    if (!held_) return;
    if (held_warning_) out.warning(std::move(*held_warning_));
    held_warning_.reset();
    out.evidence(std::move(*held_));
    held_.reset();
}

void AmdgpuFaultMatcher::close(size_t i, Sink& out) {
    Block b = std::move(blocks_[i]);
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
    if (!b.header && !b.fault_field) return;  // a lone task line (e.g. after a ring timeout)
    // A cut block is still a record (missing fields null) and a counted warning.
    std::optional<Warning> cut;
    if (!b.header)
        cut = Warning{b.ev.line, "amdgpu page-fault block without its header line (cut?)"};
    else if (!(b.seen & (1u << stageIndex(FaultStage::Address))))
        cut = Warning{b.ev.line, "amdgpu page-fault block without its address line (cut?)"};
    if (dir_ == Direction::Reverse && b.header) {
        flushHeld(out);
        held_ = std::move(b.ev);
        held_warning_ = std::move(cut);
        return;
    }
    if (cut) out.warning(std::move(*cut));
    out.evidence(std::move(b.ev));
}

// A device line that stops unfinished waits for its wrapped rest (amdgpu_wrap.h): the joined
// line is fed as the producer printed it; anything else first releases it as it is.
void AmdgpuFaultMatcher::feed(const LogLine& line, Sink& out) {
    if (wrapped_.holding()) {
        if (amdgpu::isRestOf(wrapped_.line().text, line)) {
            wrapped_.append(text::trim(line.text), line);
            if (wrapped_.rests() >= kMaxWrappedRests ||
                !amdgpu::stopsUnfinished(wrapped_.line().text))
                feedWhole(wrapped_.release(), out);
            return;
        }
        feedWhole(wrapped_.release(), out);
    }
    if (amdgpu::wantsRest(line)) return wrapped_.hold(line);
    feedWhole(line, out);
}

void AmdgpuFaultMatcher::feedWhole(const LogLine& line, Sink& out) {
    ++seq_;
    // radeon's si/cik/cayman_vm_decode_fault() print their `VM fault (…) at page …` line with a
    // bare printk(): the device of the lines right before it (its STATUS line) is its device.
    if (radeonSeq_ != 0 && seq_ - radeonSeq_ <= kRadeonDecodeLines) {
        // (anywhere in the text, as splitDeviceLine() finds a device behind other prefixes)
        const size_t at = line.text.find("VM fault (0x");
        if (at != npos && !amdgpu::mentionsAmdgpu(line.text)) {
            radeonSeq_ = 0;
            radeonLine_ = "radeon " + radeonKey_ + ": " + std::string(line.text.substr(at));
            LogLine decode = line;
            decode.text = radeonLine_;
            return feedLine(decode, out);
        }
    }
    if (amdgpu::mentionsRadeon(line.text)) {
        if (auto d = amdgpu::splitDeviceLine(line.text); d && d->radeon && d->pci) {
            radeonKey_ = *d->pci;
            radeonSeq_ = seq_;
        }
    }
    feedLine(line, out);
}

void AmdgpuFaultMatcher::feedLine(const LogLine& line, Sink& out) {
    if (amdgpu::isBootMarker(line.text)) {
        // journalctl's `-- Boot ID --` / `-- Reboot --`: the blocks before it are over, and the
        // order (and kernel clock) of the next boot is learned again from its own lines.
        if (!probe_.empty()) decide(probe_.guess(), out);
        closeAll(out);
        dir_ = Direction::Unknown;
        suppressed_.reset();
        probe_.forget();
        return;
    }
    if (probe_.empty() && dir_ != Direction::Unknown) {
        if (seq_ - last_block_seq_ > kMaxGap) {
            closeAll(out);  // a gap: the blocks in progress are over
        } else if (!startsRun(line)) {
            return step(line, out);
        }
        // A block that starts against the order may begin a run of the other order (one file
        // may hold a `journalctl -r` excerpt and a `journalctl` one): the order is learned
        // again from its lines, held until they show it.
    }
    if (probe_.stale(seq_)) settle(true, out);
    // Lines the probe does not hold change nothing before the first block line.
    if (Direction d = probe_.offer(line, seq_); d != Direction::Unknown) {
        decide(d, out);
    } else if (probe_.over()) {
        settle(false, out);  // emitted now, in step with the other matchers' records of these lines
    }
}

// Whether block line `line` starts a block in a way the order in effect does not explain, so
// that a run of the other order may begin there: oldest first, a block that starts with a line
// other than its header; newest first, a block that starts with its header (its last line), or
// that starts while the device's block before it (which ends at its header) is still open.
// Blocks that start as the order expects are read on (a clock step inside a block, a run of
// headers alone, changes nothing).
bool AmdgpuFaultMatcher::startsRun(const LogLine& line) const {
    if (!amdgpu::mentionsAmdgpu(line.text)) return false;
    auto d = amdgpu::splitDeviceLine(line.text);
    if (!d) return false;
    FaultStage s = amdgpu::classifyFaultLine(d->body);
    if (s == FaultStage::None) return false;
    size_t i = find(d->key);
    if (i != npos && joins(blocks_[i], s)) return false;
    if (dir_ == Direction::Reverse) return s == FaultStage::Header || i != npos;
    return s != FaultStage::Header;
}

// The held blocks are over (`gap`: 64 lines without a block line; else each held device printed
// a line that ends its block): reads them in guess()'s order (the last order evidence showed,
// else forward), without learning an order from them. After a gap every block in progress ends.
void AmdgpuFaultMatcher::settle(bool gap, Sink& out) {
    decide(probe_.guess(), out);
    if (gap) closeAll(out);
}

// Emits every block in progress (in the order of their first lines) and the held record.
void AmdgpuFaultMatcher::closeAll(Sink& out) {
    std::stable_sort(
        blocks_.begin(), blocks_.end(), [](auto& a, auto& b) { return a.ev.line < b.ev.line; });
    while (!blocks_.empty()) close(0, out);
    flushHeld(out);
}

// Sets the direction and feeds the lines held until now, each at its own place in the stream.
// Blocks in progress read in another order end first (a run of the other order begins).
void AmdgpuFaultMatcher::decide(Direction d, Sink& out) {
    if (dir_ != Direction::Unknown && d != dir_) {
        closeAll(out);
        // A count read oldest first waited for a block of the run that ended; one read newest
        // first with no record before it is the first line of the oldest-first run.
        if (d == Direction::Reverse) suppressed_.reset();
    }
    dir_ = d;
    uint64_t now = seq_;
    for (const auto& h : probe_.take()) {
        seq_ = h.seq;
        if (h.other) {
            LogLine other;
            other.line = h.line;
            step(other, out);
        } else {
            step(h.view(), out);
        }
    }
    seq_ = now;
}

// One line once the direction is known.
void AmdgpuFaultMatcher::step(const LogLine& line, Sink& out) {
    for (size_t i = 0; i < blocks_.size();) {
        if (seq_ - blocks_[i].touched > kMaxGap) {
            close(i, out);
        } else {
            ++i;
        }
    }
    std::string_view text = line.text;
    if (!amdgpu::mentionsAmdgpu(text)) {
        flushHeld(out);
        return;
    }
    if (auto n = suppressedCount(text)) {
        if (held_) {
            held_->setAttr("callbacks_suppressed", std::string(*n));
        } else {
            suppressed_ = std::string(*n);  // newest first: kept only until a block line
        }
        flushHeld(out);
        return;
    }
    flushHeld(out);
    auto d = amdgpu::splitDeviceLine(text);
    if (!d) return;
    FaultStage s = amdgpu::classifyFaultLine(d->body);
    size_t i = find(d->key);
    if (s == FaultStage::None) {
        if (i != npos && amdgpu::endsBlock(*d)) close(i, out);
        return;
    }
    last_block_seq_ = seq_;
    if (dir_ == Direction::Reverse) suppressed_.reset();  // a stray count, newest first
    if (i != npos && !joins(blocks_[i], s)) {
        close(i, out);
        i = npos;
    }
    if (i == npos) {
        if (blocks_.size() >= kMaxDevices) {
            auto oldest = std::min_element(blocks_.begin(), blocks_.end(), [](auto& a, auto& b) {
                return a.touched < b.touched;
            });
            close(static_cast<size_t>(oldest - blocks_.begin()), out);
        }
        Block b;
        b.key = d->key;
        b.ev.kind = Kind::AmdgpuPageFault;
        b.ev.vendor = "amd";
        b.ev.pci = d->pci;
        b.ev.line = line.line;
        b.ev.time = line.time;
        b.ev.rank = line.rank;
        if (suppressed_ && s != FaultStage::Task && dir_ != Direction::Reverse) {
            b.ev.setAttr("callbacks_suppressed", *suppressed_);
            suppressed_.reset();
        }
        blocks_.push_back(std::move(b));
        i = blocks_.size() - 1;
    }
    add(blocks_[i], s, d->body, line);
    if (dir_ == Direction::Reverse && s == FaultStage::Header) close(i, out);
}

void AmdgpuFaultMatcher::finish(Sink& out) {
    if (wrapped_.holding()) feedWhole(wrapped_.release(), out);
    if (!probe_.empty()) decide(probe_.guess(), out);
    closeAll(out);
}

}  // namespace

std::unique_ptr<Matcher> makeAmdgpuFaultMatcher() {
    return std::make_unique<AmdgpuFaultMatcher>();
}

}  // namespace gpufault
