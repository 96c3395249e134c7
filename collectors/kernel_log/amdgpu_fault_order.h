// Whether amdgpu page-fault blocks come oldest line first (dmesg, journalctl) or newest first
// (journalctl -r, `tac`), learned from the first block lines of the input (docs/formats.md,
// Kernel log).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/common/log_line.h"
#include "collectors/kernel_log/amdgpu_fault_lines.h"
#include "collectors/kernel_log/amdgpu_line.h"

namespace gpufault::amdgpu {

/// The order in which the input prints the lines of a block.
enum class Direction { Unknown, Forward, Reverse };

/// The order two stamps show: Forward when `later` (in reading order) is the later instant,
/// Reverse when it is the earlier one, Unknown when they are equal or not comparable (kernel
/// stamps, else wall stamps of one form compared as text).
Direction stampOrder(const TimeInfo& earlier, const TimeInfo& later);

/// True when a device line that is not a block line ends that device's block in progress (the
/// IOMMU's `AMD-Vi: Event logged …` and RAS CPER `{1}[Hardware Error]: …` lines interleave with
/// a block without ending it).
bool endsBlock(const DeviceLine& d);

/// A line kept while the direction is not known yet: an owned copy of what the fault matcher
/// reads from a LogLine.
struct HeldLine {
    uint64_t seq = 0;    ///< the matcher's feed counter at this line
    bool other = false;  ///< a line that does not mention amdgpu: only its place counts
    uint64_t line = 0;
    std::string raw, text;
    TimeInfo time;
    std::optional<int64_t> rank;

    /// A LogLine whose views point into this HeldLine.
    LogLine view() const;
};

/// Holds the first lines of fault blocks until their order is clear, so that no line is put in
/// the wrong block while it is not. The order is decided by the first two lines of one device
/// (in reading order) that show it: different kernel stamps (or wall stamps of one form), else
/// two lines other than the header with different stages (a header sits at the boundary of two
/// blocks either way, so a pair with a header tells nothing by itself); a pair whose stamps and
/// stages disagree tells nothing. Stamps of different devices are never compared (interleaved
/// GPUs print from different CPUs: their stamps may step back by a microsecond). Bounded: at
/// most kMaxHeldLines lines and kMaxHeldBytes bytes of text are held, then guess() decides;
/// after a gap of kMaxGapLines lines without a block line (stale()) the held blocks are over
/// whatever the order, and the caller settles them with guess() without learning an order.
/// The last order shown by such evidence outlives take(): it is guess()'s answer for the later
/// runs of blocks that show none (a newest-first journal whose later blocks are header and
/// address lines only, gmc_v10–v12 with status 0).
class DirectionProbe {
  public:
    static constexpr size_t kMaxHeldLines = 256;
    static constexpr size_t kMaxHeldBytes = 64 * 1024;
    static constexpr uint64_t kMaxGapLines = 64;

    /// Offers the next line (`seq`: the matcher's feed counter). Lines before the first line of
    /// a block (or `callbacks suppressed` line) are not held: no state depends on them. Returns
    /// the direction once this line decided it (the held lines, this one included, are then to
    /// be replayed, see take()); Unknown while it is not decided.
    Direction offer(const LogLine& line, uint64_t seq);

    /// The direction when the held lines show no telling pair: the last direction evidence
    /// showed earlier in this input (learned()), else oldest first (reversed reading rests on
    /// evidence only; the shape `address, header, …, header` is also that of a forward `grep`
    /// cut at both ends). Newest-first input whose stamps are equal (journalctl short, to the
    /// second) and that keeps only header and task, or header and address lines, cannot be
    /// told from forward input when nothing before it showed the order, and is read forward.
    Direction guess() const;

    /// The direction the last telling pair showed (offer() returned it), Unknown before any.
    Direction learned() const { return learned_; }

    /// The held lines, in reading order; the probe is empty afterwards.
    std::vector<HeldLine> take();

    /// Drops the held lines and the learned order (a boot marker: the next boot's lines show
    /// their own order, and its kernel stamps restart).
    void forget() {
        take();
        learned_ = Direction::Unknown;
    }

    /// True when lines are held and none of the last kMaxGapLines lines (up to `seq`) was a
    /// block line: every held block has ended.
    bool stale(uint64_t seq) const;

    /// True when block lines are held and each of their devices has since printed a line that
    /// ends a block (endsBlock()): whatever the order, no later line joins a held block.
    bool over() const;

    bool empty() const { return held_.empty(); }
    /// The source line of the first held line, nullopt when none is held.
    std::optional<uint64_t> firstLine() const;

  private:
    struct DeviceSeen {
        std::string key;
        FaultStage stage = FaultStage::None;
        TimeInfo time;
        bool open = true;  // no line ended its block since its last block line
    };

    std::vector<HeldLine> held_;
    std::vector<DeviceSeen> devices_;  // last block line of each device, at most 16
    size_t bytes_ = 0;
    uint64_t last_block_seq_ = 0;
    std::optional<FaultStage> first_stage_, last_stage_;
    Direction learned_ = Direction::Unknown;  // kept by take()
};

}  // namespace gpufault::amdgpu
