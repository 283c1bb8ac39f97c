// The Python module's precompiled header (python/CMakeLists.txt): LibTorch with its Python side
// (the at::Tensor <-> torch.Tensor type caster) and pybind11.
#pragma once
#include <torch/extension.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>
