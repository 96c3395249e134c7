#include "collectors/kernel_log/gpu_reset.h"

#include <algorithm>
#include <string>
#include <vector>

#include "collectors/kernel_log/amdgpu_line.h"
#include "collectors/kernel_log/amdgpu_reset_lines.h"

namespace gpufault {

namespace {

using amdgpu::ResetEvent;
constexpr auto npos = std::string_view::npos;

constexpr size_t kMaxDevices = 16;  // episodes in progress at once (one per device)
constexpr uint64_t kMaxGap = 256;   // lines without one of its own after which an episode ends

// One reset episode of one device: from its first line (ring timeout, MES failure, RAS error,
// reset begin, …) to `GPU reset(N) succeeded!`/`failed`, a successful ring reset, or a gap.
struct Episode {
    std::string key;  // device; "" for the device-less DRM_ERROR lines of older kernels
    Evidence ev;
    uint64_t touched = 0;
    bool confirmed = false;   // a reset/timeout/MES line, not only a RAS error
    bool timeout = false;     // has its ring timeout
    bool begun = false;       // has `GPU reset begin!`
    bool await_task = false;  // the previous line was the ring timeout: its task line may follow
};

void copyTask(const Evidence& from, Evidence& to) {
    to.pid = from.pid;
    to.process = from.process;
    to.tid = from.tid;
    to.thread = from.thread;
}

class GpuResetMatcher final : public Matcher {
  public:
    void feed(const LogLine& line, Sink& out) override;
    void finish(Sink& out) override;
    bool kernelLogOnly() const override { return true; }
    bool idle() const override { return episodes_.empty() && !task_; }
    /// The first line of the oldest episode in progress or of the pending task line.
    std::optional<uint64_t> openSince() const override {
        std::optional<uint64_t> first;
        if (task_) first = task_->line;
        for (const auto& e : episodes_)
            if (!first || e.ev.line < *first) first = e.ev.line;
        return first;
    }

  private:
    size_t find(std::string_view key) const;
    size_t open(const LogLine& line,
                std::string key,
                std::optional<std::string> pci,
                ResetEvent ev,
                Sink& out);
    void close(size_t i, Sink& out);

    // A task line that followed no ring timeout: in newest-first input (journalctl -r) it
    // belongs to the ring timeout on the next line.
    struct PendingTask {
        std::string key;
        uint64_t seq = 0;
        uint64_t line = 0;
        Evidence said;
        std::string raw;
    };

    std::vector<Episode> episodes_;
    std::optional<PendingTask> task_;
    uint64_t seq_ = 0;
};

size_t GpuResetMatcher::find(std::string_view key) const {
    for (size_t i = 0; i < episodes_.size(); ++i)
        if (episodes_[i].key == key) return i;
    return npos;
}

void GpuResetMatcher::close(size_t i, Sink& out) {
    Episode e = std::move(episodes_[i]);
    episodes_.erase(episodes_.begin() + static_cast<std::ptrdiff_t>(i));
    if (e.confirmed) out.evidence(std::move(e.ev));
}

size_t GpuResetMatcher::open(const LogLine& line,
                             std::string key,
                             std::optional<std::string> pci,
                             ResetEvent ev,
                             Sink& out) {
    if (!key.empty()) {  // a device line takes over the device-less episode before it
        // (not a timeout of its own: `ring X timeout, but soft recovered` is one as well)
        size_t anon = find("");
        const bool own = ev == ResetEvent::RingTimeout || ev == ResetEvent::SoftRecovered;
        if (anon != npos && !(own && episodes_[anon].timeout)) {
            episodes_[anon].key = std::move(key);
            episodes_[anon].ev.pci = std::move(pci);
            return anon;
        }
    }
    if (episodes_.size() >= kMaxDevices) {
        auto oldest = std::min_element(episodes_.begin(), episodes_.end(), [](auto& a, auto& b) {
            return a.touched < b.touched;
        });
        close(static_cast<size_t>(oldest - episodes_.begin()), out);
    }
    Episode e;
    e.key = std::move(key);
    e.ev.kind = Kind::GpuReset;
    e.ev.vendor = "amd";
    e.ev.pci = std::move(pci);
    e.ev.line = line.line;
    e.ev.time = line.time;
    e.ev.rank = line.rank;
    e.ev.setAttr("trigger", std::string(amdgpu::eventName(ev)));
    episodes_.push_back(std::move(e));
    return episodes_.size() - 1;
}

void GpuResetMatcher::feed(const LogLine& line, Sink& out) {
    ++seq_;
    if (task_ && task_->seq + 1 < seq_) task_.reset();  // only the very next line may use it
    for (size_t i = 0; i < episodes_.size();) {
        if (seq_ - episodes_[i].touched > kMaxGap) {
            close(i, out);
        } else {
            ++i;
        }
    }
    std::string_view text = line.text;
    if (!amdgpu::mentionsAmdgpu(text)) return;

    Evidence said;  // what this line states, merged into its episode below
    ResetEvent ev;
    std::string key;
    std::optional<std::string> pci;
    auto d = amdgpu::splitDeviceLine(text);
    if (d) {
        ev = amdgpu::classifyResetLine(d->body, said);
        key = std::move(d->key);
        pci = std::move(d->pci);
    } else {
        ev = amdgpu::classifyDrmErrorLine(text, said);
    }
    size_t i = find(key);
    if (ev == ResetEvent::None) {
        if (i != npos && d) episodes_[i].await_task = false;
        return;
    }
    if (ev == ResetEvent::Task) {  // only right after a ring timeout of the same device
        if (i == npos || !episodes_[i].await_task) {  // or right before it, newest first
            task_ = PendingTask{key, seq_, line.line, std::move(said), std::string(line.raw)};
            return;
        }
        Episode& e = episodes_[i];
        copyTask(said, e.ev);
        e.await_task = false;
        e.touched = seq_;
        amdgpu::appendRaw(e.ev.raw, line.raw);
        return;
    }
    bool starts_own = ev == ResetEvent::RingTimeout || ev == ResetEvent::SoftRecovered;
    if (i != npos && starts_own && (episodes_[i].timeout || episodes_[i].begun)) {
        close(i, out);
        i = npos;
    }
    bool reversed_task =
        ev == ResetEvent::RingTimeout && task_ && task_->seq + 1 == seq_ && task_->key == key;
    if (i == npos) i = open(line, std::move(key), std::move(pci), ev, out);
    Episode& e = episodes_[i];
    if (reversed_task) {
        copyTask(task_->said, e.ev);
        amdgpu::appendRaw(e.ev.raw, task_->raw);
    }
    for (auto& [k, v] : said.attrs) e.ev.setAttr(k, v);
    e.confirmed |= ev != ResetEvent::RasUncorrectable;
    e.timeout |= starts_own;
    e.begun |= ev == ResetEvent::ResetBegin;
    e.await_task = ev == ResetEvent::RingTimeout && !reversed_task;
    e.touched = seq_;
    amdgpu::appendRaw(e.ev.raw, line.raw);
    if (amdgpu::endsEpisode(ev)) close(i, out);
}

void GpuResetMatcher::finish(Sink& out) {
    std::stable_sort(
        episodes_.begin(), episodes_.end(), [](auto& a, auto& b) { return a.ev.line < b.ev.line; });
    while (!episodes_.empty()) close(0, out);
}

}  // namespace

std::unique_ptr<Matcher> makeGpuResetMatcher() {
    return std::make_unique<GpuResetMatcher>();
}

}  // namespace gpufault
