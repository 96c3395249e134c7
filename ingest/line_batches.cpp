#include "ingest/line_batches.h"

#include <cstring>
#include <vector>

namespace gpufault {

void classify(LineBatch& b, LineClassifier& c) {
    b.kept.clear();
    const size_t n = b.lines();
    if (n == 0) return;
    // The kept lines go to this thread's scratch, which has room for every line (written
    // through a pointer: no capacity test a line), then to the batch in one allocation of
    // their size. What the loop reads of `b` is copied first: the stores through `out` might
    // alias it, so the compiler would load it again for every line.
    thread_local std::vector<LineBatch::Kept> scratch;
    if (scratch.size() < n) scratch.resize(n);
    LineBatch::Kept* const first = scratch.data();
    LineBatch::Kept* out = first;
    const uint32_t* const ends = b.ends.data();
    const char* const t = b.text();
    const size_t end = ends[n - 1];
    const bool cut = b.cut;
    // The first '\r' at or after the current line's start (or `end` when none): one search
    // for a batch without carriage returns.
    size_t cr = 0;
    bool crKnown = false;
    FixedLine fx;
    for (size_t i = 0; i < n; ++i) {
        const size_t s = i == 0 ? 0 : size_t{ends[i - 1]} + 1;
        const size_t len = ends[i] - s;
        if (!crKnown || cr < s) {
            const void* p = std::memchr(t + s, '\r', end - s);
            cr = p ? static_cast<size_t>(static_cast<const char*>(p) - t) : end;
            crKnown = true;
        }
        const bool mayCr = cr < ends[i];
        if (len > LineDecoder::kMaxLine || cut) {
            *out++ = {static_cast<uint32_t>(i), LineDecoder::Class::Other, true, true, {}};
            continue;
        }
        switch (c.classify(std::string_view(t + s, len), fx, mayCr)) {
            case LineDecoder::Class::Drop:
                break;
            case LineDecoder::Class::Fixed:
                *out++ = {static_cast<uint32_t>(i), LineDecoder::Class::Fixed, false, mayCr, fx};
                break;
            case LineDecoder::Class::Other:
                *out++ = {static_cast<uint32_t>(i), LineDecoder::Class::Other, false, mayCr, {}};
                break;
        }
    }
    b.kept.assign(first, out);
}

bool BatchChannel::classifyOne(std::unique_lock<std::mutex>& lock,
                               LineClassifier& c,
                               uint64_t& count) {
    for (LineBatch& b : q_) {
        if (b.claimed) continue;
        b.claimed = true;
        lock.unlock();
        classify(b, c);  // `b` stays put: the consumer takes only classified batches
        lock.lock();
        b.classified = true;
        ++count;
        cv_.notify_all();
        return true;
    }
    return false;
}

bool BatchChannel::push(LineBatch&& b, LineClassifier& c) {
    std::unique_lock lock(mu_);
    while (!closed_ && q_.size() >= capacity_)
        if (!classifyOne(lock, c, byProducer_)) cv_.wait(lock);
    if (closed_) return false;
    q_.push_back(std::move(b));
    q_.back().claimed = q_.back().classified = false;
    cv_.notify_all();
    return true;
}

std::optional<LineBatch> BatchChannel::pop(LineClassifier& c) {
    std::unique_lock lock(mu_);
    for (;;) {
        if (closed_) return std::nullopt;
        if (!q_.empty() && q_.front().classified) break;
        if (!classifyOne(lock, c, byConsumer_)) cv_.wait(lock);
    }
    LineBatch b = std::move(q_.front());
    q_.pop_front();
    cv_.notify_all();
    return b;
}

void BatchChannel::done(uint64_t seq) {
    std::lock_guard lock(mu_);
    done_ = seq;
    cv_.notify_all();
}

bool BatchChannel::waitDone(uint64_t seq, LineClassifier& c) {
    std::unique_lock lock(mu_);
    while (!closed_ && done_ < seq)
        if (!classifyOne(lock, c, byProducer_)) cv_.wait(lock);
    return !closed_;
}

void BatchChannel::close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
}

std::pair<uint64_t, uint64_t> BatchChannel::classifiedBy() const {
    std::lock_guard lock(mu_);
    return {byProducer_, byConsumer_};
}

}  // namespace gpufault
