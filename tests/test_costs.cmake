# Seconds of CPU the longest tests took on lavapipe (2 cores, ctest's own cost data), as each
# test's COST. ctest -j starts the costliest tests first, but a clean build (CI) has no cost data
# yet and runs them in number order, which put the longest of all near the end, alone on one core
# while the other idled. Included by ctest after the discovered tests (tests/CMakeLists.txt); a
# name that no longer exists is ignored, so a stale entry costs only its ordering.
foreach(entry
    "119|apps.vkf translate in fp16 agrees with fp32 on the sample's test split"
    "110|shaders.attention with f16 storage matches the reference"
    "65|apps.vkf bench: a wrong kernel FAILs its check and the exit status says so"
    "61|apps.mpirun -np 2 vkf train equals two in-process devices, bit for bit"
    "60|shaders.attention forward and backward match the reference, every rows-path variant"
    "60|apps.vkf bench --suite quick: every row checked, a valid result file"
    "59|shaders.attention forward and backward match the reference on each path's default tiles, d to 64"
    "54|model.fp16 training follows fp32 training on the bundled sample"
    "48|shaders.layer_norm with f16 storage: every workgroup size and reduction path"
    "46|model.a non-finite gradient leaves the fp16 run's weights and moments as they were"
    "45|shaders.attention forward and backward match the reference on each path's default tiles, d 128"
    "45|shaders.attention forward and backward match the reference, every tiled-path tile config"
    "44|model.fp16 and fp32 steps give the same gradients, tensor by tensor"
    "33|shaders.layer_norm: every workgroup size and reduction path"
    "30|apps.vkf bench compare: two devices side by side, as a table and as a page"
    "25|apps.vkf serve: 64 concurrent clients, every answer as vkf translate's"
    "23|model.2 and 3 logical devices train like one device with the whole batch"
    "19|model.training on a copy task drives the loss to near zero"
    "19|model.a resumed run ends bit-identical to an uninterrupted one"
    "18|shaders.topk of logits returns the winners' log-softmax")
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} cost)
  math(EXPR name_start "${bar} + 1")
  string(SUBSTRING "${entry}" ${name_start} -1 name)
  set_tests_properties("${name}" PROPERTIES COST ${cost})
endforeach()
