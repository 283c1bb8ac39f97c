# Decides SEQLAB_PYTHON, the option that builds the Python module (python/CMakeLists.txt). It
# defaults ON when pybind11 and a Python whose torch is the LibTorch this project links (Debian's
# python3-torch) are both found, OFF otherwise, so a machine without them still builds everything
# else. Included before the library is defined: the module is a shared object that links the
# static library whole, so the library's objects must be position-independent (-fPIC, see the
# top-level CMakeLists.txt).
set(SEQLAB_PYTHON_EXECUTABLE /usr/bin/python3 CACHE FILEPATH
    "the Python the seqlab module is built for (it must import torch: Debian's python3-torch)")
set(seqlab_python_default OFF)
set(seqlab_python_why "")
find_package(pybind11 CONFIG QUIET)
if(NOT pybind11_FOUND)
  set(seqlab_python_why "pybind11 not found (apt install pybind11-dev)")
else()
  execute_process(
    COMMAND ${SEQLAB_PYTHON_EXECUTABLE} -c
            "import os, torch; print(torch.__version__); print(os.path.dirname(torch.__file__))"
    OUTPUT_VARIABLE seqlab_torch_out RESULT_VARIABLE seqlab_torch_rc ERROR_QUIET
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT seqlab_torch_rc EQUAL 0)
    set(seqlab_python_why "${SEQLAB_PYTHON_EXECUTABLE} cannot import torch (apt install python3-torch)")
  else()
    string(REPLACE "\n" ";" seqlab_torch_out "${seqlab_torch_out}")
    list(GET seqlab_torch_out 0 SEQLAB_PYTORCH_VERSION)
    list(GET seqlab_torch_out 1 SEQLAB_PYTORCH_DIR)
    # Tensors cross without copies only if both sides are the same LibTorch: the module must
    # load the very libtorch_python that `import torch` loads.
    find_library(SEQLAB_TORCH_PYTHON_LIB torch_python HINTS ${SEQLAB_PYTORCH_DIR}/lib NO_DEFAULT_PATH)
    get_filename_component(seqlab_torch_cpu_real ${TORCH_LIBRARY} REALPATH)
    get_filename_component(seqlab_py_torch_real ${SEQLAB_PYTORCH_DIR}/lib/libtorch.so REALPATH)
    if(NOT SEQLAB_TORCH_PYTHON_LIB)
      set(seqlab_python_why "no libtorch_python under ${SEQLAB_PYTORCH_DIR}/lib")
    elseif(NOT seqlab_torch_cpu_real STREQUAL seqlab_py_torch_real)
      set(seqlab_python_why "the Python's torch (${seqlab_py_torch_real}) is not the LibTorch linked here (${seqlab_torch_cpu_real})")
    else()
      set(seqlab_python_default ON)
    endif()
  endif()
endif()
option(SEQLAB_PYTHON "build the Python module (python/): import seqlab" ${seqlab_python_default})
if(SEQLAB_PYTHON AND NOT seqlab_python_default)
  message(FATAL_ERROR "SEQLAB_PYTHON=ON but ${seqlab_python_why}")
elseif(NOT SEQLAB_PYTHON AND seqlab_python_why)
  message(STATUS "seqlab: Python module off: ${seqlab_python_why}")
endif()
