#pragma once
// The engine's public surface: include this to embed vkformer's Vulkan compute engine.
#include "engine/cpu_driver.h"
#include "engine/device.h"
#include "engine/device_info.h"
#include "engine/error.h"
#include "engine/instance.h"
#include "engine/kernel.h"
#include "engine/launch.h"
#include "engine/memory.h"
#include "engine/recorder.h"
#include "engine/tensor.h"
#include "engine/timeline.h"
