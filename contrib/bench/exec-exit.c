/* exec-exit: the smallest command there is, for bench-exec-floor.sh: no
 * libc, one page of code, exit(0) by a raw syscall. What an exec of it
 * costs is the exec itself (a new address space, the ELF load, the exit
 * and reap) with next to no page faults of the command's own. Built with
 * -nostdlib -static. */
void _start (void);

void
_start (void)
{
#if defined(__x86_64__)
  __asm__ volatile("mov $60, %eax\n\txor %edi, %edi\n\tsyscall");
#elif defined(__aarch64__)
  __asm__ volatile("mov x8, #93\n\tmov x0, #0\n\tsvc #0");
#else
#error "exec-exit: x86_64 or aarch64 only"
#endif
  for (;;)
    ;
}
