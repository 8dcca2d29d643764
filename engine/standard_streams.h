#pragma once
// Standard streams a process can rely on. Started with descriptor 0, 1 or 2 closed (`2>&-`), a
// process's next open() takes that number, and everything written to "stderr" then lands in that
// file: log lines in a translation, a whole log in a lock file. vkf and the C API's entry points
// call this first.
namespace vkf {

// Opens /dev/null onto each of descriptors 0-2 that is closed. Safe to call more than once.
void open_closed_standard_streams() noexcept;

}  // namespace vkf
