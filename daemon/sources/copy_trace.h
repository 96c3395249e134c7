// TEMPORARY tracing of copytruncate decisions (GPUFAULTD_COPY_TRACE=<file>); removed before merge.
#pragma once
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace gpufault::daemon {
inline FILE* copyTraceFile() {
    static FILE* f = [] {
        const char* p = std::getenv("GPUFAULTD_COPY_TRACE");
        return p && *p ? std::fopen(p, "a") : nullptr;
    }();
    return f;
}
template <typename... A>
void ctrace(fmt::format_string<A...> s, A&&... a) {
    if (FILE* f = copyTraceFile()) {
        std::string t = fmt::format("{} ", ::getpid()) + fmt::format(s, std::forward<A>(a)...);
        t += '\n';
        std::fwrite(t.data(), 1, t.size(), f);
        std::fflush(f);
    }
}
}  // namespace gpufault::daemon
