#include "collectors/kernel_log/gpu_reset.h"

#include <algorithm>
#include <string>
#include <vector>

#include "collectors/kernel_log/amdgpu_fault_order.h"
#include "collectors/kernel_log/amdgpu_line.h"
#include "collectors/kernel_log/amdgpu_reset_lines.h"

namespace gpufault {

namespace {

using amdgpu::Direction;
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
    bool resumed = false;     // has `GPU reset succeeded, trying to resume`
    bool await_task = false;  // the previous line was the ring timeout: its task line may follow
};

void copyTask(const Evidence& from, Evidence& to) {
    to.pid = from.pid;
    to.process = from.process;
    to.tid = from.tid;
    to.thread = from.thread;
}

// Assembles episodes from lines in time order (oldest first); `seq` numbers the input's lines.
class Episodes {
  public:
    void step(const LogLine& line, uint64_t seq, Sink& out);
    void finish(Sink& out);
    uint64_t seq() const { return seq_; }
    bool idle() const { return episodes_.empty(); }
    /// True when reset line `ev` of device `key` starts a new run of episodes: no episode is
    /// in progress but, perhaps, that device's when it has resumed and `ev` does not end it
    /// (`GPU reset(N) succeeded!` follows the resume).
    bool between(std::string_view key, ResetEvent ev) const {
        if (amdgpu::endsEpisode(ev) && !episodes_.empty()) return false;
        for (const auto& e : episodes_)
            if (e.key != key || !e.resumed) return false;
        return true;
    }
    /// Ends every episode in progress.
    void closeAll(Sink& out) { finish(out); }
    /// The first line of the oldest episode in progress.
    std::optional<uint64_t> openSince() const {
        std::optional<uint64_t> first;
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

    std::vector<Episode> episodes_;
    uint64_t seq_ = 0;
};

size_t Episodes::find(std::string_view key) const {
    for (size_t i = 0; i < episodes_.size(); ++i)
        if (episodes_[i].key == key) return i;
    return npos;
}

void Episodes::close(size_t i, Sink& out) {
    Episode e = std::move(episodes_[i]);
    episodes_.erase(episodes_.begin() + static_cast<std::ptrdiff_t>(i));
    if (e.confirmed) out.evidence(std::move(e.ev));
}

size_t Episodes::open(const LogLine& line,
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

void Episodes::step(const LogLine& line, uint64_t seq, Sink& out) {
    seq_ = seq;
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
        if (i == npos || !episodes_[i].await_task) return;
        Episode& e = episodes_[i];
        copyTask(said, e.ev);
        e.await_task = false;
        e.touched = seq_;
        amdgpu::appendRaw(e.ev.raw, line.raw);
        return;
    }
    bool starts_own = ev == ResetEvent::RingTimeout || ev == ResetEvent::SoftRecovered;
    // A reset that resumed is over: a later reset step belongs to another episode.
    bool again = ev == ResetEvent::ResetBegin || ev == ResetEvent::ResetMethod ||
                 ev == ResetEvent::ResetResume;
    if (i != npos && ((starts_own && (episodes_[i].timeout || episodes_[i].begun)) ||
                      (again && episodes_[i].resumed))) {
        close(i, out);
        i = npos;
    }
    if (i == npos) i = open(line, std::move(key), std::move(pci), ev, out);
    Episode& e = episodes_[i];
    for (auto& [k, v] : said.attrs) {
        // Each MES message that went unanswered in the episode, once, in input order
        // (`REMOVE_QUEUE,MISC`): a second MES line does not hide the first.
        auto had = k == "mes_msg" ? e.ev.attr(k) : std::nullopt;
        if (!had) {
            e.ev.setAttr(k, v);
            continue;
        }
        std::string list(*had);
        bool seen = false;
        for (size_t at = 0; at <= list.size();) {
            size_t c = std::min(list.find(',', at), list.size());
            seen |= std::string_view(list).substr(at, c - at) == v;
            at = c + 1;
        }
        if (!seen && list.size() < 256) e.ev.setAttr(k, list + "," + v);
    }
    e.confirmed |= ev != ResetEvent::RasUncorrectable;
    e.timeout |= starts_own;
    e.begun |= ev == ResetEvent::ResetBegin;
    e.resumed |= ev == ResetEvent::ResetResume;
    e.await_task = ev == ResetEvent::RingTimeout;
    e.touched = seq_;
    amdgpu::appendRaw(e.ev.raw, line.raw);
    if (amdgpu::endsEpisode(ev)) close(i, out);
}

void Episodes::finish(Sink& out) {
    std::stable_sort(
        episodes_.begin(), episodes_.end(), [](auto& a, auto& b) { return a.ev.line < b.ev.line; });
    while (!episodes_.empty()) close(0, out);
}

// The event a line states (amdgpu lines only), and its device key ("" without a device).
ResetEvent eventOf(std::string_view text, std::string& key) {
    Evidence said;
    if (auto d = amdgpu::splitDeviceLine(text)) {
        key = std::move(d->key);
        return amdgpu::classifyResetLine(d->body, said);
    }
    key.clear();
    return amdgpu::classifyDrmErrorLine(text, said);
}

// Where an event stands in the middle of an episode (`GPU reset begin!` → `MODE2 reset` →
// `GPU reset succeeded, trying to resume`); 0 for the others, whose order tells nothing (a new
// episode may follow the end of the last one).
int middleRank(ResetEvent ev) {
    switch (ev) {
        case ResetEvent::ResetBegin:
            return 1;
        case ResetEvent::ResetMethod:
            return 2;
        case ResetEvent::ResetResume:
            return 3;
        default:
            return 0;
    }
}

// Reads reset episodes in either order (dmesg and journalctl oldest first; journalctl -r and
// `tac` newest first): from its first reset line the input's lines are held until two lines
// of one device show the order — different stamps, a task line right before (newest first)
// or after (oldest first) its ring timeout, an uncorrectable RAS error and the `GPU reset
// begin!` it causes next, or two middle events (middleRank) — then replayed
// oldest first into Episodes. Newest-first input is held until a gap of kMaxGap lines without
// a reset line (or kMaxHeld lines) and replayed in reverse. No order shown within kMaxGap
// lines: oldest first.
class GpuResetMatcher final : public Matcher {
  public:
    void feed(const LogLine& line, Sink& out) override;
    void finish(Sink& out) override;
    bool kernelLogOnly() const override { return true; }
    bool idle() const override { return held_.empty() && episodes_.idle(); }
    /// The first line held, else the first line of the oldest episode in progress.
    std::optional<uint64_t> openSince() const override {
        auto first = episodes_.openSince();
        if (!held_.empty() && (!first || held_.front().line < *first)) return held_.front().line;
        return first;
    }

  private:
    static constexpr size_t kMaxHeld = 1024;
    static constexpr size_t kMaxHeldBytes = 256 * 1024;

    struct Seen {
        std::string key;
        ResetEvent ev = ResetEvent::None;
        TimeInfo time;
        uint64_t seq = 0;
        size_t at = 0;  // its index in held_
    };
    Direction learn(
        const std::string& key, ResetEvent ev, const LogLine& line, size_t& prev, bool& by_task);
    void replay(Sink& out);
    void split(size_t prev, Sink& out);

    Episodes episodes_;
    Direction dir_ = Direction::Unknown;
    Direction learned_ = Direction::Unknown;  // the order the last telling pair showed
    std::vector<amdgpu::HeldLine> held_;      // in reading order
    struct Shown {
        ResetEvent ev = ResetEvent::None;  // None for the other amdgpu lines
        Direction d = Direction::Unknown;  // the order its pair showed
        std::string key;                   // its device
    };
    std::vector<Shown> shown_;  // per held line
    std::vector<Seen> seen_;    // the last reset line of each device held
    size_t bytes_ = 0;
    uint64_t seq_ = 0, last_ = 0;  // lines fed; the last reset line held
};

// The order the last held line (of `key`, event `ev`) and the device's reset line before it show;
// `prev` is set to that line's index in held_ (npos when the device has none), `by_task` to
// whether only a task line next to a ring timeout showed it (two timeouts in a row, each with
// its task line, read newest first give `timeout, task` too: it never ends a newest-first run).
Direction GpuResetMatcher::learn(
    const std::string& key, ResetEvent ev, const LogLine& line, size_t& prev, bool& by_task) {
    auto it = std::find_if(seen_.begin(), seen_.end(), [&](auto& s) { return s.key == key; });
    Direction d = Direction::Unknown;
    if (it != seen_.end()) {
        prev = it->at;
        d = amdgpu::stampOrder(it->time, line.time);
        bool next = it->seq + 1 == seq_;
        if (d == Direction::Unknown && next && it->ev == ResetEvent::Task &&
            ev == ResetEvent::RingTimeout)
            d = Direction::Reverse;
        if (d == Direction::Unknown && next && it->ev == ResetEvent::RingTimeout &&
            ev == ResetEvent::Task)
            d = Direction::Forward;
        by_task = d != Direction::Unknown && (ev == ResetEvent::Task || it->ev == ResetEvent::Task);
        // amdgpu_ras.c reports the uncorrectable error, then the reset begins
        if (d == Direction::Unknown && it->ev == ResetEvent::RasUncorrectable &&
            ev == ResetEvent::ResetBegin)
            d = Direction::Forward;
        if (d == Direction::Unknown && it->ev == ResetEvent::ResetBegin &&
            ev == ResetEvent::RasUncorrectable)
            d = Direction::Reverse;
        int a = middleRank(it->ev), b = middleRank(ev);
        if (d == Direction::Unknown && a && b && a != b)
            d = b > a ? Direction::Forward : Direction::Reverse;
    } else if (seen_.size() < kMaxDevices) {
        it = seen_.insert(seen_.end(), Seen{key, ResetEvent::None, {}, 0, 0});
    }
    if (it != seen_.end()) *it = Seen{key, ev, line.time, seq_, held_.size() - 1};
    return d;
}

void GpuResetMatcher::replay(Sink& out) {
    if (dir_ == Direction::Reverse) {
        // newest first: replayed last line first, the gaps between lines kept
        uint64_t base = episodes_.seq() + 1, top = held_.back().seq;
        for (auto h = held_.rbegin(); h != held_.rend(); ++h)
            episodes_.step(h->view(), base + (top - h->seq), out);
        episodes_.finish(out);  // a gap (or the bound) ended every episode held
    } else {
        for (const auto& h : held_) episodes_.step(h.view(), h.seq, out);
    }
    held_.clear();
    shown_.clear();
    seen_.clear();
    bytes_ = 0;
}

// The held lines are a newest-first run, then, from the pair `prev` → the last held line that
// showed oldest first, a run read oldest first (`journalctl -r` and `journalctl` excerpts in one
// file). The oldest-first run begins right after `prev` when the last line opens an episode of
// its own (a ring timeout, a soft recovery, an uncorrectable RAS error) or `prev`'s own pair
// showed newest first (`prev` ends the newest-first run); else it begins at `prev` and takes the
// reset lines of its device right before it while their stamps do not fall towards it (`journalctl`
// short stamps tie within a second: lines that tie go with the oldest-first run; the newest-first
// run's last line is later than the first of an older excerpt after it). The first run is read last
// line first, the second as it comes.
void GpuResetMatcher::split(size_t prev, Sink& out) {
    size_t cur = held_.size() - 1;
    ResetEvent ce = shown_[cur].ev;
    bool opens = ce == ResetEvent::RingTimeout || ce == ResetEvent::SoftRecovered ||
                 ce == ResetEvent::RasUncorrectable;
    size_t k = prev + 1;
    if (!opens && shown_[prev].d != Direction::Reverse) {
        k = prev;
        for (size_t i = prev; i-- > 0;) {
            if (shown_[i].ev == ResetEvent::None) continue;
            if (shown_[i].key != shown_[prev].key) break;
            const TimeInfo &a = held_[i].time, &b = held_[k].time;
            bool tie = a.kernel_s ? a.kernel_s == b.kernel_s : a.wall && a.wall == b.wall;
            if (!tie && amdgpu::stampOrder(a, b) != Direction::Forward) break;
            k = i;
        }
    }
    std::vector<amdgpu::HeldLine> rest(std::make_move_iterator(held_.begin() + k),
                                       std::make_move_iterator(held_.end()));
    held_.resize(k);
    shown_.resize(k);
    dir_ = Direction::Reverse;
    if (!held_.empty()) replay(out);
    dir_ = Direction::Forward;
    for (const auto& h : rest) episodes_.step(h.view(), h.seq, out);
    held_.clear();
    shown_.clear();
    seen_.clear();
    bytes_ = 0;
}

void GpuResetMatcher::feed(const LogLine& line, Sink& out) {
    ++seq_;
    std::string_view text = line.text;
    if (amdgpu::isBootMarker(text)) {
        // journalctl's `-- Boot ID --`: the episodes before it are over, the next boot's lines
        // show their own order (and their kernel stamps restart)
        finish(out);
        dir_ = learned_ = Direction::Unknown;
        return;
    }
    bool amd = amdgpu::mentionsAmdgpu(text);
    std::string key;
    ResetEvent ev = amd ? eventOf(text, key) : ResetEvent::None;
    if (dir_ == Direction::Forward) {
        if (ev == ResetEvent::None || ev == ResetEvent::Task || !episodes_.between(key, ev))
            return episodes_.step(line, seq_, out);
        // A reset line after the episodes (a reset that resumed is over): a new run, whose
        // order is learned again (a newest-first excerpt may follow).
        episodes_.closeAll(out);
        dir_ = Direction::Unknown;
    }
    if (!held_.empty() && seq_ - last_ > kMaxGap) {  // every held episode is over
        if (dir_ == Direction::Unknown) dir_ = learned_;
        replay(out);
    }
    // Hold from a reset line on, while no episode read oldest first is in progress.
    if (held_.empty()) {
        if (ev == ResetEvent::None || !episodes_.idle()) {
            if (dir_ != Direction::Reverse) episodes_.step(line, seq_, out);
            return;
        }
        dir_ = Direction::Unknown;  // a new run: its lines show its order
    }
    if (!amd) return;  // only its place counts (seq)
    amdgpu::HeldLine h;
    h.seq = seq_;
    h.line = line.line;
    h.raw = std::string(line.raw);
    h.text = std::string(text);
    h.time = line.time;
    h.rank = line.rank;
    bytes_ += h.raw.size() + h.text.size();
    held_.push_back(std::move(h));
    shown_.push_back({ev, Direction::Unknown, key});
    if (ev == ResetEvent::None) return;
    last_ = seq_;
    size_t prev = npos;
    bool by_task = false;
    Direction d = learn(key, ev, line, prev, by_task);
    shown_.back().d = d;
    if (d != Direction::Unknown) learned_ = d;
    if (dir_ == Direction::Unknown && d == Direction::Forward) {
        dir_ = Direction::Forward;
        replay(out);
        return;
    }
    if (dir_ == Direction::Reverse && d == Direction::Forward && !by_task) return split(prev, out);
    if (dir_ == Direction::Unknown && d == Direction::Reverse) dir_ = Direction::Reverse;
    if (held_.size() >= kMaxHeld || bytes_ >= kMaxHeldBytes) {
        if (dir_ == Direction::Unknown) dir_ = learned_;
        replay(out);
    }
}

void GpuResetMatcher::finish(Sink& out) {
    if (!held_.empty()) {
        if (dir_ == Direction::Unknown) dir_ = learned_;
        replay(out);
    }
    episodes_.finish(out);
}

}  // namespace

std::unique_ptr<Matcher> makeGpuResetMatcher() {
    return std::make_unique<GpuResetMatcher>();
}

}  // namespace gpufault
