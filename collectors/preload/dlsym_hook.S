// dlsym interposer: asks gpufault_dlsym_pick for a wrapper; otherwise tail-jumps to the real
// dlsym with the caller's arguments and return address untouched (RTLD_NEXT and RTLD_DEFAULT
// depend on who called). x86-64 System V only.
    .text
    .globl dlsym
    .type dlsym, @function
dlsym:
    .cfi_startproc
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call gpufault_dlsym_pick
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    testq %rax, %rax
    jnz 1f
    jmp *gpufault_real_dlsym(%rip)
1:
    ret
    .cfi_endproc
    .size dlsym, .-dlsym
    .section .note.GNU-stack,"",@progbits
