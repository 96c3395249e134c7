#include "daemon/test_pause.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gpufault::daemon {

void testPause(const char* point) {
    const char* dir = std::getenv("GPUFAULTD_TEST_PAUSE_DIR");
    if (!dir || !*dir) return;
    std::string armed = std::string(dir) + "/" + point, paused = armed + ".paused";
    if (std::rename(armed.c_str(), paused.c_str()) != 0) return;  // not armed
    struct timespec ms {
        0, 1000000
    };
    for (int i = 0; i < 30000 && ::access(paused.c_str(), F_OK) == 0; ++i) nanosleep(&ms, nullptr);
}

}  // namespace gpufault::daemon
