#include "collectors/kernel_log/amdgpu_fault_order.h"

#include <utility>

#include "collectors/common/text.h"

namespace gpufault::amdgpu {

// The order two stamps of one device show: Forward when `later` (in reading order) is the later
// instant, Reverse when it is the earlier one, Unknown when they are equal or not comparable.
// Wall stamps compare as text when they have one form (same length): `MM-DDTHH:MM:SS[.ffffff]`
// or `YYYY-MM-DDTHH:MM:SS[.ffffff]`.
Direction stampOrder(const TimeInfo& earlier, const TimeInfo& later) {
    if (earlier.kernel_s && later.kernel_s) {
        if (*later.kernel_s > *earlier.kernel_s) return Direction::Forward;
        if (*later.kernel_s < *earlier.kernel_s) return Direction::Reverse;
        return Direction::Unknown;
    }
    if (earlier.wall && later.wall && earlier.wall->size() == later.wall->size()) {
        int c = later.wall->compare(*earlier.wall);
        if (c > 0) return Direction::Forward;
        if (c < 0) return Direction::Reverse;
    }
    return Direction::Unknown;
}

bool endsBlock(const DeviceLine& d) {
    if (d.tagged) return true;
    return !text::startsWith(d.body, "AMD-Vi") && !text::startsWith(d.body, "{");
}

LogLine HeldLine::view() const {
    LogLine l;
    l.line = line;
    l.raw = raw;
    l.text = text;
    l.time = time;
    l.rank = rank;
    return l;
}

Direction DirectionProbe::offer(const LogLine& line, uint64_t seq) {
    std::string_view text = line.text;
    bool amd = mentionsAmdgpu(text);
    FaultStage stage = FaultStage::None;
    std::optional<DeviceLine> dev;
    if (amd && (dev = splitDeviceLine(text))) stage = classifyFaultLine(dev->body);
    bool suppressed = amd && text.find(" callbacks suppressed") != std::string_view::npos;
    if (held_.empty() && stage == FaultStage::None && !suppressed) return Direction::Unknown;

    if (held_.empty()) last_block_seq_ = seq;
    HeldLine h;
    h.seq = seq;
    h.other = !amd;
    h.line = line.line;
    if (amd) {
        h.raw = std::string(line.raw);
        h.text = std::string(text);
        h.time = line.time;
        h.rank = line.rank;
        bytes_ += h.raw.size() + h.text.size();
    }
    held_.push_back(std::move(h));

    Direction found = Direction::Unknown;
    if (stage != FaultStage::None) {
        last_block_seq_ = seq;
        if (!first_stage_) first_stage_ = stage;
        last_stage_ = stage;
        DeviceSeen* seen = nullptr;
        for (auto& d : devices_)
            if (d.key == dev->key) seen = &d;
        if (seen) {
            Direction by_stamp = stampOrder(seen->time, line.time);
            Direction by_stage = Direction::Unknown;
            if (stage != FaultStage::Header && seen->stage != FaultStage::Header &&
                stage != seen->stage)
                by_stage = stage > seen->stage ? Direction::Forward : Direction::Reverse;
            // Stamps and stages that disagree (a clock step within one device) tell nothing.
            if (by_stamp == Direction::Unknown) {
                found = by_stage;
            } else if (by_stage == Direction::Unknown || by_stage == by_stamp) {
                found = by_stamp;
            }
        } else if (devices_.size() < 16) {
            devices_.push_back({dev->key, stage, {}});
            seen = &devices_.back();
        }
        if (seen) {
            seen->stage = stage;
            seen->time = line.time;
            seen->open = true;
        }
    } else if (dev && endsBlock(*dev)) {
        for (auto& d : devices_)
            if (d.key == dev->key) d.open = false;
    }
    if (found != Direction::Unknown) {
        learned_ = found;
        return found;
    }
    if (held_.size() >= kMaxHeldLines || bytes_ >= kMaxHeldBytes) return guess();
    return Direction::Unknown;
}

Direction DirectionProbe::guess() const {
    // The shape of the held lines (`address, header, …, header`) tells nothing: a forward
    // `grep` cut at both ends has it too. The order the input showed before goes on (one
    // journal keeps its order: `journalctl -r` after a quiet hour is still newest first), else
    // forward output, the common case.
    return learned_ != Direction::Unknown ? learned_ : Direction::Forward;
}

std::vector<HeldLine> DirectionProbe::take() {
    std::vector<HeldLine> out = std::move(held_);
    held_.clear();
    devices_.clear();
    bytes_ = 0;
    first_stage_.reset();
    last_stage_.reset();
    return out;
}

bool DirectionProbe::stale(uint64_t seq) const {
    return !held_.empty() && seq - last_block_seq_ > kMaxGapLines;
}

bool DirectionProbe::over() const {
    if (!first_stage_) return false;
    for (const auto& d : devices_)
        if (d.open) return false;
    return true;
}

std::optional<uint64_t> DirectionProbe::firstLine() const {
    if (held_.empty()) return std::nullopt;
    return held_.front().line;
}

}  // namespace gpufault::amdgpu
