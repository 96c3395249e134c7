// The amdgpu messages of a ring timeout / GPU reset episode, one parser per producer format
// string (FORMATS.md §1.5, §1.7; amdgpu_job.c, amdgpu_device.c, amdgpu_mes.c, soc15.c/nv.c/vi.c,
// amdgpu_ras.c).
#pragma once

#include <string_view>

#include "collectors/common/evidence.h"

namespace gpufault::amdgpu {

/// What one line says about a reset episode.
enum class ResetEvent {
    None,
    RingTimeout,      ///< `ring %s timeout, signaled seq=%u, emitted seq=%u` (also DRM_ERROR form)
    SoftRecovered,    ///< `ring %s timeout, but soft recovered` (ends the episode)
    Task,             ///< ` Process %s pid %d thread %s pid %d`, `Process information: process …`
    RingResetStart,   ///< `Starting %s ring reset`
    RingResetOk,      ///< `Ring %s reset succeeded` (ends the episode)
    RingResetFailed,  ///< `Ring %s reset failed`
    ResetBegin,   ///< `GPU reset begin!`, `GPU reset begin!. Source:  %d`, `GPU jobs stop begin!`
    ResetMethod,  ///< `MODE1 reset`, `GPU mode1 reset`, `MODE2 reset`, `BACO reset`, …
    ResetResume,  ///< `GPU reset succeeded, trying to resume`
    ResetDone,    ///< `GPU reset(%d) succeeded!`, `GPU reset end with ret = %d` (ends)
    ResetFailed,  ///< `GPU reset(%d) failed…`, `GPU Recovery Failed: %d` (ends)
    MesFailure,   ///< `MES failed to respond to msg=%s`, `MES might be in unrecoverable state…`
    RasUncorrectable,  ///< `uncorrectable hardware error(%s) detected!` (a reset must follow)
};

/// True for events after which the episode is over.
bool endsEpisode(ResetEvent ev);

/// The event of `body` (a device line's message, see splitDeviceLine) and the attrs it states
/// (`ring`, `signaled_seq`, `emitted_seq`, `source`, `reset_method`, `result`, `reset_count`,
/// `mes_msg`, `ras_error`) added to `e`; a Task line's pid/process/tid/thread go to `e` too.
/// `[drm…] *ERROR* ` before the message is skipped.
ResetEvent classifyResetLine(std::string_view body, Evidence& e);

/// For lines without a device prefix: the DRM_ERROR forms of older kernels,
/// `[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, signaled seq=…` and
/// `… *ERROR* Process information: process %s pid %d thread %s pid %d`, and FreeBSD drm-kmod's
/// `[drm ERROR :amdgpu_job_timedout] …` of the same messages. None otherwise.
ResetEvent classifyDrmErrorLine(std::string_view text, Evidence& e);

/// A short name of the event for the `trigger` attr (`ring_timeout`, `mes_failure`, …).
std::string_view eventName(ResetEvent ev);

}  // namespace gpufault::amdgpu
