// Parser micro-benchmarks: ns per line through the decoder and all matchers (no store).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/pipeline.h"

namespace {

class NullSink final : public gpufault::Sink {
  public:
    size_t n = 0;
    void evidence(gpufault::Evidence&&) override { ++n; }
    void dispatch(gpufault::Dispatch&&) override { ++n; }
    void operand(gpufault::Operand&&) override { ++n; }
    void warning(gpufault::Warning&&) override { ++n; }
};

const std::vector<std::string> kAmdLog = {
    ":3:hip_device_runtime.cpp   :623 : 1000000000 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
    "hipGetDevice ( 0x70536bbc2ecc ) ",
    ":3:hip_device_runtime.cpp   :631 : 1000000001 us: [pid:4242  tid:0x7f0a1b2c3d40] "
    "hipGetDevice: Returned hipSuccess : ",
    ":3:hip_module.cpp           :669 : 1000000002 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
    "hipLaunchKernel ( 0x7056a988e9d0, {1048576,1,1}, {256,1,1}, 0x70536bbc2fa0, 0, "
    "stream:0x5631a8c0e290 ) ",
    ":3:rocvirtual.cpp           :798 : 1000000003 us: [pid:4242  tid:0x7f0a1b2c3d40] Arg0:   = "
    "val:1073741824",
    ":3:rocvirtual.cpp           :723 : 1000000004 us: [pid:4242  tid:0x7f0a1b2c3d40] Arg1:   = "
    "ptr:0x705165a01000 obj:[0x705165a00000-0x705365a00000]",
    ":3:rocvirtual.cpp           :3016: 1000000005 us: [pid:4242  tid:0x7f0a1b2c3d40] ShaderName : "
    "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3_"
    "ASE_ASGT_ASLT_ASAE01_ASCE01_ASEM1_AAC0_BL1_BS1_DTL0_DTVA0",
    ":3:hip_module.cpp           :670 : 1000000006 us: [pid:4242  tid:0x7f0a1b2c3d40] "
    "hipLaunchKernel: Returned hipSuccess : ",
    ":3:hip_stream.cpp           :476 : 1000000007 us: [pid:4242  tid:0x7f0a1b2c3d40] "
    "hipStreamQuery: Returned hipErrorNotReady : ",
};

const std::vector<std::string> kKernelLog = {
    "[ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 "
    "vmid:3 pasid:32769)",
    "[ 4778.916571] amdgpu 0000:c6:00.0: amdgpu:   in page starting at address 0x0000ae8570611000 "
    "from IH client 0x1b (UTCL2)",
    "[ 4778.917054] amdgpu 0000:c6:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00301031",
    "[ 4778.917532] amdgpu 0000:c6:00.0: amdgpu: \t Faulty UTCL2 client ID: TCP (0x8)",
    "[ 4779.000001] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
    "[ 4779.000002] EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode. Quota mode: "
    "none.",
};

void runLines(benchmark::State& state, const std::vector<std::string>& lines) {
    NullSink sink;
    gpufault::TextPipeline pipe(sink);
    uint64_t n = 0;
    size_t bytes = 0;
    for (auto _ : state) {
        const auto& l = lines[n % lines.size()];
        pipe.feedLine(++n, l);
        bytes += l.size() + 1;
    }
    pipe.finish();
    benchmark::DoNotOptimize(sink.n);
    state.SetItemsProcessed(static_cast<int64_t>(n));
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

void BM_AmdLogLine(benchmark::State& s) {
    runLines(s, kAmdLog);
}
void BM_KernelLogLine(benchmark::State& s) {
    runLines(s, kKernelLog);
}
void BM_PlainLine(benchmark::State& s) {
    runLines(s, {"Epoch 3/10: loss=0.2341 lr=1e-4 tokens/s=12345 step=1200 grad_norm=0.93"});
}

BENCHMARK(BM_AmdLogLine);
BENCHMARK(BM_KernelLogLine);
BENCHMARK(BM_PlainLine);

}  // namespace

BENCHMARK_MAIN();
