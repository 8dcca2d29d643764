#pragma once
// vkformer for C++ host applications: the engine (devices, created or adopted; memory; the
// recorder with derived barriers, host kernels, submit/poll and semaphores; the ops) and the
// model's inference API (vkf::Translator, vkf::Scorer). README.md, "Embedding", is the one-page
// guide; the C API is <vkformer/vkformer.h>.
//
// Installed layout: <prefix>/include/vkformer/{vkformer.hpp, vkformer.h, engine/..., model/...}.
// Both <prefix>/include and <prefix>/include/vkformer are include directories (the CMake targets
// and pkg-config set them), so the headers' own "engine/device.h" includes resolve.
#include "engine/engine.h"
#include "engine/ops/attention.h"
#include "engine/ops/basic.h"
#include "engine/ops/matmul.h"
#include "model/api/scorer.h"
#include "model/api/translator.h"
