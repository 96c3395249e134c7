#include "collectors/prefix/journal_entry.h"

#include <fmt/format.h>

#include <ctime>

namespace gpufault {

std::string journalLinePrefix(const JournalEntry& e) {
    if (e.transport == "kernel")
        return fmt::format("{},0,{},-;", e.priority.value_or(6), e.monotonic_us.value_or(0));
    time_t secs = static_cast<time_t>(e.realtime_us / 1000000);
    tm t{};
    ::gmtime_r(&secs, &t);
    std::string ident = e.identifier.empty() ? "unknown" : e.identifier;
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+0000 {} {}{}: ",
                       t.tm_year + 1900,
                       t.tm_mon + 1,
                       t.tm_mday,
                       t.tm_hour,
                       t.tm_min,
                       t.tm_sec,
                       e.realtime_us % 1000000,
                       e.hostname.empty() ? "localhost" : e.hostname,
                       ident,
                       e.pid ? fmt::format("[{}]", *e.pid) : "");
}

}  // namespace gpufault
