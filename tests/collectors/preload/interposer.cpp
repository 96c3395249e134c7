// Another interposer preloaded after the shim: wraps puts and finds the real one with
// dlsym(RTLD_NEXT). The shim's dlsym must answer as if this library had called glibc's (its
// trampoline keeps the caller's return address); otherwise RTLD_NEXT would be taken from the
// shim's place and return this very function.
#include <dlfcn.h>

#include <cstdio>

extern "C" int puts(const char* s) {
    static auto real = reinterpret_cast<int (*)(const char*)>(dlsym(RTLD_NEXT, "puts"));
    if (!real || real == &puts) return EOF;
    std::fputs("[interposed] ", stdout);
    return real(s);
}
