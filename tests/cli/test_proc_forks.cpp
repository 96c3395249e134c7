// The processes of a `gpufault run` job from the kernel's fork events (cli/proc_forks.h):
// datagrams built as linux/cn_proc.h lays them out, and a real job whose children live for
// a moment (sampling /proc every 200 ms kept only the job's own pid).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "cli/proc_forks.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using gpufault::cli::applyForkEvents;

namespace {

/// One netlink message holding a connector message with `e`.
std::string message(const proc_event& e, uint32_t idx = CN_IDX_PROC) {
    std::string out(NLMSG_SPACE(sizeof(cn_msg) + sizeof(proc_event)), '\0');
    nlmsghdr h{};
    h.nlmsg_len = NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_event));
    h.nlmsg_type = NLMSG_DONE;
    cn_msg m{};
    m.id.idx = idx;
    m.id.val = CN_VAL_PROC;
    m.len = sizeof(proc_event);
    std::memcpy(out.data(), &h, sizeof h);
    std::memcpy(out.data() + NLMSG_HDRLEN, &m, sizeof m);
    std::memcpy(out.data() + NLMSG_HDRLEN + sizeof m, &e, sizeof e);
    return out;
}

proc_event fork(pid_t parent_tgid, pid_t child_pid, pid_t child_tgid) {
    proc_event e{};
    e.what = proc_event::PROC_EVENT_FORK;
    e.event_data.fork.parent_pid = parent_tgid;
    e.event_data.fork.parent_tgid = parent_tgid;
    e.event_data.fork.child_pid = child_pid;
    e.event_data.fork.child_tgid = child_tgid;
    return e;
}

TEST(ForkEvents, ForksOfTheJobsProcessesAddTheirChildren) {
    std::set<pid_t> pids{100};
    proc_event exec{};
    exec.what = proc_event::PROC_EVENT_EXEC;
    exec.event_data.exec.process_pid = 300;
    exec.event_data.exec.process_tgid = 300;
    const std::string d = message(fork(100, 101, 101)) +  // the job's child
                          message(fork(101, 102, 102)) +  // its grandchild, in the same datagram
                          message(fork(999, 998, 998)) +  // another process's child
                          message(fork(100, 103, 100)) +  // a thread of the job: no process
                          message(exec) +                 // not a fork
                          message(fork(100, 104, 104), CN_IDX_PROC + 1);  // another connector
    EXPECT_EQ(applyForkEvents(d, pids), 2u);
    EXPECT_EQ(pids, (std::set<pid_t>{100, 101, 102}));
    // A message cut short, and a length past the datagram: nothing read from them.
    const std::string one = message(fork(100, 105, 105));
    EXPECT_EQ(applyForkEvents(one.substr(0, one.size() - 8), pids), 0u);
    std::string lying = one;
    uint32_t len = 1 << 20;
    std::memcpy(lying.data(), &len, sizeof len);
    EXPECT_EQ(applyForkEvents(lying, pids), 0u);
    EXPECT_EQ(applyForkEvents("", pids), 0u);
    EXPECT_EQ(pids.size(), 3u);
}

TEST(ForkEvents, ARunRecordsChildrenThatLiveForAMoment) {
    if (!gpufault::cli::ForkEvents::open())  // gpufault run samples /proc alone then
        GTEST_SKIP() << "the process-events connector needs CAP_NET_ADMIN (root)";
    TempDir t;
    auto r = run({GPUFAULT_BIN,
                  "--db",
                  t.file("db"),
                  "run",
                  "--",
                  "/bin/sh",
                  "-c",
                  "for i in 1 2 3 4 5; do /bin/sh -c 'echo child $$'; done"});
    ASSERT_EQ(r.status, 0) << r.err;
    std::set<int> children;
    std::smatch m;
    for (std::string s = r.out; std::regex_search(s, m, std::regex("child (\\d+)")); s = m.suffix())
        children.insert(std::stoi(m[1]));
    ASSERT_EQ(children.size(), 5u) << r.out;
    auto q = run({GPUFAULT_BIN, "--db", t.file("db"), "query", "SELECT pids FROM runs", "--csv"});
    auto line = q.out.substr(q.out.find('\n') + 1);
    auto pids = nlohmann::json::parse(line.substr(1, line.rfind('"') - 1), nullptr, false);
    ASSERT_TRUE(pids.is_array()) << q.out;
    std::set<int> recorded(pids.begin(), pids.end());
    for (int c : children) EXPECT_TRUE(recorded.contains(c)) << c << " not in " << line;
}

}  // namespace
