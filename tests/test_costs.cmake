# Seconds the longest tests took on lavapipe in a clean-clone run of scripts/check (2 cores, cold
# pipeline and shader caches), as each test's COST. ctest -j starts the costliest tests first,
# but a clean build (CI) has no cost data yet and runs them in number order, which put the
# longest of all near the end, alone on one core while the other idled. Included by ctest after the discovered tests (tests/CMakeLists.txt); a
# name that no longer exists is ignored, so a stale entry costs only its ordering.
foreach(entry
    "250|apps.vkf translate in fp16 agrees with fp32 on the sample's test split"
    "211|shaders.matmul matches the reference for every tuning-table row"
    "187|apps.vkf bench: a wrong kernel FAILs its check and the exit status says so"
    "169|shaders.attention with f16 storage matches the reference"
    "165|shaders.matmul through texel views matches the reference for every direct row"
    "165|apps.vkf serve: 64 concurrent clients, every answer as vkf translate's"
    "141|shaders.attention forward and backward match the reference, every rows-path variant"
    "108|model.fp16 training follows fp32 training on the bundled sample"
    "99|shaders.matmul: the 128x128 coopmat row's kernel with emulated fragments matches the reference"
    "75|apps.vkf bench --suite quick: every row checked, a valid result file"
    "75|shaders.matmul: the 64x64 coopmat row's kernel with emulated fragments matches the reference"
    "72|shaders.attention forward and backward match the reference on each path's default tiles, d 128"
    "69|shaders.topk of logits returns the winners' log-softmax"
    "66|shaders.matmul: the KHR rows' kernel with emulated fragments matches the reference"
    "64|shaders.layer_norm with f16 storage: every workgroup size and reduction path"
    "64|apps.mpirun -np 2 vkf train equals two in-process devices, bit for bit"
    "58|shaders.attention forward and backward match the reference, every tiled-path tile config"
    "57|shaders.attention forward and backward match the reference on each path's default tiles, d to 64"
    "52|shaders.layer_norm: every workgroup size and reduction path"
    "51|model.2 and 3 logical devices train like one device with the whole batch"
    "37|model.a non-finite gradient leaves the fp16 run's weights and moments as they were"
    "34|model.split-k gradient matmuls give the gradients of unsplit ones"
    "33|shaders.matmul through texel views matches the reference for every shared-memory row"
    "32|model.training on a copy task drives the loss to near zero"
    "31|apps.vkf bench compare: two devices side by side, as a table and as a page"
    "28|model.a resumed run ends bit-identical to an uninterrupted one")
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} cost)
  math(EXPR name_start "${bar} + 1")
  string(SUBSTRING "${entry}" ${name_start} -1 name)
  set_tests_properties("${name}" PROPERTIES COST ${cost})
endforeach()

# The wrong-kernel run of `vkf bench` compiles a subset of the quick suite's kernels: after it,
# from the Mesa shader cache, it took 64 s; beside it, both compiling, 187 s.
set_tests_properties(
  "apps.vkf bench: a wrong kernel FAILs its check and the exit status says so"
  PROPERTIES DEPENDS "apps.vkf bench --suite quick: every row checked, a valid result file")
