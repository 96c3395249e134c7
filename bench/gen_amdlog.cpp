// Generates an AMD_LOG_LEVEL=3 log of a given size with the line mix of a real training job:
// HIP API trace lines, ArgN lines, about one line in 15 a ShaderName (long Tensile names), a few
// operand probe lines and ROCr faults. ROCm 6.2 prefix (`[pid:%-5d tid:0x…]`, FORMATS.md §3.1).
// usage: gen_amdlog SIZE_MIB OUT
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

const char* kTensile[] = {
    "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3_"
    "ASE_ASGT_ASLT_ASAE01_ASCE01_ASEM1_AAC0_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS1_FL0_GRPM1_GRVW8_GSU1_"
    "GSUASB_GLS0_ISA90a_IU1_K1_KLA_LBSPPA0_LBSPPB0_LPA0_LPB0_LDL1_LRVW16_LWPMn1_LDW0_FMA_MIAV0_"
    "MDA2_MO40_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR1_SIA3_SS1_SU32_"
    "SUM0_SUS128_SCIUI1_SPO0_SRVW0_SSO0_SVW4_SNLL0_TT4_32_TLDS1_USFGROn1_VAW2_VSn1_VW4_WSGRA1_"
    "WSGRB1_WS64_WG32_8_1_WGM8",
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_"
    "ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_LBSPPA2048_"
    "LBSPPB2048_LBSPPM0_LPA16_LPB16_LPM0_LRVW16_LWPMn1_MIAV1_MIWT8_8_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_"
    "NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK0_SKXCCM0_TLDS1_"
    "ULSGRODn1_UMLDSA1_UMLDSB1_USFGROn1_VSn1_VWA8_VWB8_WSGRA0_WSGRB0_WS64_WG32_8_1",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIN3c104HalfEEENS_"
    "6detail5ArrayIPcLi1EEEEEviT0_T1_",
    "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_15sum_"
    "functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4EEEEEvT1_",
    "_ZN7ck_tile6kentryILi256ELi2ENS_22FmhaFwdKernelI"};

struct Out {
    std::FILE* f;
    std::string buf;
    size_t written = 0;
    void line(std::string_view s) {
        buf.append(s);
        buf.push_back('\n');
        if (buf.size() > (1 << 20)) flush();
    }
    void flush() {
        std::fwrite(buf.data(), 1, buf.size(), f);
        written += buf.size();
        buf.clear();
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: gen_amdlog SIZE_MIB OUT\n");
        return 2;
    }
    size_t target = std::strtoull(argv[1], nullptr, 10) << 20;
    Out o{std::fopen(argv[2], "wb"), {}};
    if (!o.f) {
        std::perror(argv[2]);
        return 2;
    }
    const int pids[] = {4242, 4243};
    const char* tids[] = {"7f0a1b2c3d40", "7f0a1b2c4640", "7f0a0a7fe700", "7f09e7fff640"};
    uint64_t us = 1000000000, n = 0;
    std::string p;
    while (o.written + o.buf.size() < target) {
        int pid = pids[n % 2];
        const char* tid = tids[(n / 2) % 4];
        auto pre = [&](const char* file, int line) {
            p = fmt::format(
                ":3:{:<25}:{:<4}: {:010} us: [pid:{:<5} tid:0x{}] ", file, line, us++, pid, tid);
            return p;
        };
        // One launch: 15 lines, one of them the ShaderName.
        o.line(pre("hip_device_runtime.cpp", 623) + " hipGetDevice ( 0x70536bbc2ecc ) ");
        o.line(pre("hip_device_runtime.cpp", 631) + "hipGetDevice: Returned hipSuccess : ");
        o.line(
            pre("hip_platform.cpp", 225) +
            " __hipPushCallConfiguration ( {1048576,1,1}, {256,1,1}, 0, stream:0x5631a8c0e290 ) ");
        o.line(pre("hip_platform.cpp", 229) + "__hipPushCallConfiguration: Returned hipSuccess : ");
        o.line(pre("hip_platform.cpp", 237) +
               " __hipPopCallConfiguration ( {0,0,0}, {0,0,0}, 0x70536bbc2f88, 0x70536bbc2f80 ) ");
        o.line(pre("hip_platform.cpp", 246) + "__hipPopCallConfiguration: Returned hipSuccess : ");
        o.line(pre("hip_module.cpp", 669) +
               " hipLaunchKernel ( 0x7056a988e9d0, {1048576,1,1}, {256,1,1}, 0x70536bbc2fa0, 0, "
               "stream:0x5631a8c0e290 ) ");
        o.line(pre("rocvirtual.cpp", 798) + "Arg0:   = val:1073741824");
        uint64_t base = 0x705165a00000 + (n % 64) * 0x200000000ull;
        o.line(pre("rocvirtual.cpp", 723) + fmt::format("Arg1:   = ptr:0x{:x} obj:[0x{:x}-0x{:x}]",
                                                        base + 0x1000,
                                                        base,
                                                        base + 0x200000000ull));
        o.line(pre("rocvirtual.cpp", 723) + fmt::format("Arg2:   = ptr:0x{:x} obj:[0x{:x}-0x{:x}]",
                                                        base + 0x80000000ull,
                                                        base,
                                                        base + 0x200000000ull));
        o.line(pre("rocvirtual.cpp", 3016) + "ShaderName : " + kTensile[n % 5]);
        o.line(pre("hip_module.cpp", 670) + "hipLaunchKernel: Returned hipSuccess : ");
        o.line(pre("hip_error.cpp", 36) + " hipGetLastError (  ) ");
        o.line(pre("hip_stream.cpp", 471) + " hipStreamQuery ( stream:0x5631a8c0e290 ) ");
        o.line(pre("hip_stream.cpp", 476) + "hipStreamQuery: Returned hipErrorNotReady : ");
        if (n % 50000 == 25000) {  // a few operands and a fault
            o.line(
                fmt::format("[dequant_probe] name=W{} shape=(21504, 5376) stride=(1, 21504) "
                            "dtype=torch.bfloat16 ptr=0x{:x} end=0x{:x}",
                            n,
                            base,
                            base + 0xdc80000));
            o.line(
                fmt::format("Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on "
                            "address 0x{:x}. Reason: Page not present or supervisor privilege.",
                            base + 0x40000000));
        }
        ++n;
    }
    o.flush();
    std::fclose(o.f);
    std::fprintf(stderr,
                 "%s: %zu bytes, %llu launches\n",
                 argv[2],
                 o.written,
                 static_cast<unsigned long long>(n));
    return 0;
}
