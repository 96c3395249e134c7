// The processes a job forks, from the kernel's process-events connector (NETLINK_CONNECTOR,
// group CN_IDX_PROC; events as linux/cn_proc.h defines them): every fork is told, also of a
// process that lives a microsecond, which sampling /proc/PID/task/TID/children every 200 ms
// misses. Subscribing needs CAP_NET_ADMIN (root); without it `gpufault run` samples alone.
#pragma once

#include <sys/types.h>

#include <optional>
#include <set>
#include <string_view>

namespace gpufault::cli {

/// Applies the fork events of one datagram from the connector (netlink messages, each a
/// cn_msg holding a proc_event): a fork whose parent process (tgid) is in `pids` adds its
/// child process. Pure; messages cut short or of other kinds are skipped. Returns the number
/// of processes added.
size_t applyForkEvents(std::string_view datagram, std::set<pid_t>& pids);

/// A subscription to the connector's process events, while alive.
class ForkEvents {
  public:
    /// nullopt when the connector cannot be joined (EPERM without CAP_NET_ADMIN, a kernel
    /// without CONFIG_PROC_EVENTS).
    static std::optional<ForkEvents> open();
    ForkEvents(ForkEvents&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    ForkEvents& operator=(ForkEvents&&) = delete;
    ForkEvents(const ForkEvents&) = delete;
    ~ForkEvents();

    /// For poll(): readable when events are queued.
    int fd() const { return fd_; }
    /// Reads every queued datagram into `pids` (applyForkEvents); false when the kernel
    /// dropped events (ENOBUFS: the socket's queue overflowed on a busy machine).
    bool drain(std::set<pid_t>& pids);

  private:
    explicit ForkEvents(int fd) : fd_(fd) {}
    int fd_ = -1;
};

}  // namespace gpufault::cli
