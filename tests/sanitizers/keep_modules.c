/* LD_PRELOADed into the sanitizer test runs: dlclose() keeps the library loaded, so that the
   leak reports LeakSanitizer prints at exit can still name the library a leak came from (the
   Vulkan loader unloads the driver and layers before exit, leaving "<unknown module>"), and the
   reports from code outside this repository can be suppressed by name (lsan.supp). */
int dlclose(void* handle) {
  (void)handle;
  return 0;
}
