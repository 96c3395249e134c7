// A rendezvous for tests that must change files at one exact instant of the daemon's work
// (a race they could otherwise only hit by chance). Off unless GPUFAULTD_TEST_PAUSE_DIR is set.
#pragma once

namespace gpufault::daemon {

/// When the environment variable GPUFAULTD_TEST_PAUSE_DIR names a directory holding a file
/// `point` (the test arms it): renames it to `point.paused` and blocks until that file is gone
/// (the test removes it once it has done its part), at most 30 s. Each arming pauses once.
/// Without the variable (production) it returns at once: one getenv per call.
void testPause(const char* point);

}  // namespace gpufault::daemon
