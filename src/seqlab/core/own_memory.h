// This process's own resident memory, from /proc/self/status (Linux).
//
// Not getrusage: a process that posix_spawn started (glibc spawns with CLONE_VM | CLONE_VFORK)
// shares its parent's address space until exec, and the kernel records that address space's
// high-water mark as the new process's maxrss at exec (fs/exec.c, setmax_mm_hiwater_rss). So
// the child's ru_maxrss, in getrusage(RUSAGE_SELF) and in the parent's wait4, starts at the
// parent's peak: a suite worker of a suite process whose peak was 161 MB, or a bench child of a
// parent that loaded every model, reports at least that. VmHWM is the high-water mark of the
// address space exec made, so it counts this program alone.
#pragma once

#include <cstdint>
#include <string>

namespace seqlab {

// A /proc/self/status field in KiB ("VmRSS", "VmHWM"); -1 when it cannot be read.
int64_t proc_status_kb(const std::string& field);

// This process's resident high-water mark since exec (VmHWM), in KiB; -1 when unreadable. Note
// that writing 5 to /proc/self/clear_refs resets it (exp/cells/mae_deq.cpp's step memory does).
inline int64_t own_peak_rss_kb() {
  return proc_status_kb("VmHWM");
}

}  // namespace seqlab
