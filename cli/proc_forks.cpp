#include "cli/proc_forks.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpufault::cli {

size_t applyForkEvents(std::string_view datagram, std::set<pid_t>& pids) {
    size_t added = 0;
    size_t off = 0;
    while (off + sizeof(nlmsghdr) <= datagram.size()) {
        nlmsghdr h;
        std::memcpy(&h, datagram.data() + off, sizeof h);
        if (h.nlmsg_len < sizeof h || h.nlmsg_len > datagram.size() - off) break;
        const size_t body = off + NLMSG_HDRLEN;
        if (h.nlmsg_len >= NLMSG_HDRLEN + sizeof(cn_msg) + sizeof(proc_event)) {
            cn_msg m;
            std::memcpy(&m, datagram.data() + body, sizeof m);
            proc_event e;
            std::memcpy(&e, datagram.data() + body + sizeof(cn_msg), sizeof e);
            if (m.id.idx == CN_IDX_PROC && m.id.val == CN_VAL_PROC &&
                e.what == proc_event::PROC_EVENT_FORK &&
                pids.contains(e.event_data.fork.parent_tgid) &&
                pids.insert(e.event_data.fork.child_tgid).second)
                ++added;
        }
        off += NLMSG_ALIGN(h.nlmsg_len);
    }
    return added;
}

std::optional<ForkEvents> ForkEvents::open() {
    int fd = ::socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
    if (fd < 0) return std::nullopt;
    ForkEvents f(fd);
    sockaddr_nl a{};
    a.nl_family = AF_NETLINK;
    a.nl_groups = CN_IDX_PROC;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return std::nullopt;
    // PROC_CN_MCAST_LISTEN (Documentation/driver-api/connector.rst): a netlink header, a
    // cn_msg, the operation.
    constexpr size_t kLen = NLMSG_HDRLEN + sizeof(cn_msg) + sizeof(proc_cn_mcast_op);
    alignas(nlmsghdr) char req[NLMSG_SPACE(sizeof(cn_msg) + sizeof(proc_cn_mcast_op))] = {};
    nlmsghdr h{};
    h.nlmsg_len = kLen;
    h.nlmsg_type = NLMSG_DONE;
    cn_msg m{};
    m.id.idx = CN_IDX_PROC;
    m.id.val = CN_VAL_PROC;
    m.len = sizeof(proc_cn_mcast_op);
    const proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
    std::memcpy(req, &h, sizeof h);
    std::memcpy(req + NLMSG_HDRLEN, &m, sizeof m);
    std::memcpy(req + NLMSG_HDRLEN + sizeof m, &op, sizeof op);
    if (::send(fd, req, kLen, 0) != static_cast<ssize_t>(kLen)) return std::nullopt;
    return f;
}

ForkEvents::~ForkEvents() {
    if (fd_ >= 0) ::close(fd_);
}

bool ForkEvents::drain(std::set<pid_t>& pids) {
    bool whole = true;
    alignas(nlmsghdr) char buf[16384];
    for (;;) {
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n > 0) {
            applyForkEvents(std::string_view(buf, static_cast<size_t>(n)), pids);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == ENOBUFS) {
            whole = false;
            continue;
        }
        return whole;  // EAGAIN: nothing queued
    }
}

}  // namespace gpufault::cli
