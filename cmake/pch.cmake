# Precompiled third-party headers. Three header-only libraries are most of the build's compile
# time: CLI11 (about 15 s of g++ per file that includes it), nlohmann/json (4 s) and Catch2's
# single header (2 s), against well under a second for most of this project's own files. On
# the 2-core CI machine each build of the project compiles them dozens of times over.
#
# Off by default under ccache, which does not cache a file compiled against a precompiled header
# unless its sloppiness settings allow it (CCACHE_SLOPPINESS=pch_defines,time_macros):
# incremental builds there are already cheap. -DVKF_PCH=ON/OFF overrides.
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
  set(vkf_pch_default OFF)
else()
  set(vkf_pch_default ON)
endif()
option(VKF_PCH "Precompile the CLI11, nlohmann/json and Catch2 headers" ${vkf_pch_default})

# vkf_precompile(<target> <header>...): the target's files are compiled against these headers,
# precompiled once for it.
function(vkf_precompile target)
  if(VKF_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
