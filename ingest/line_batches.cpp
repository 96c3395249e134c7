#include "ingest/line_batches.h"

namespace gpufault {

bool BatchChannel::push(LineBatch&& b) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || q_.size() < capacity_; });
    if (closed_) return false;
    q_.push_back(std::move(b));
    cv_.notify_all();
    return true;
}

std::optional<LineBatch> BatchChannel::pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !q_.empty(); });
    if (q_.empty()) return std::nullopt;
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

bool BatchChannel::waitDone(uint64_t seq) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || done_ >= seq; });
    return !closed_;
}

void BatchChannel::close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
}

}  // namespace gpufault
