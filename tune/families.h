#pragma once
// The tuner's side of every tuned family (FamilyTuner<F>, tune/family_tuner.h), for the code
// that walks them all (ops::for_each_family).
#include "tune/adam_family.h"
#include "tune/attention_family.h"
#include "tune/cross_entropy_family.h"
#include "tune/layer_norm_family.h"
#include "tune/matmul_family.h"
#include "tune/topk_family.h"
