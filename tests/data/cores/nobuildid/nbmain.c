/* A crash at nullptr + 0x8a, dumped without ELF headers (coredump_filter 0x03). */
#include <stdio.h>
#ifdef OTHER_BUILD
void padding_fn(void) { puts("a"); puts("b"); puts("c"); }
#endif
__attribute__((noinline)) int read_handle(volatile int* p) { return p[0]; }
int main(void) {
    volatile int* h = (volatile int*)0x8a;
    return read_handle(h);
}
