# NCCL for libdet_nccl, when CUDA was found (DET_CUDA_ENABLED): the CUDA toolkit's, or the
# nvidia-nccl Python wheel's that PyTorch installs (its lib/ has only libnccl.so.2), found through
# `python3 -c 'import nvidia.nccl'`. Sets NCCL_INCLUDE_DIR and NCCL_LIBRARY, or leaves NCCL_LIBRARY
# unset.
if(DET_CUDA_ENABLED)
  find_program(DET_PYTHON3 python3)
  set(NCCL_WHEEL_DIR "")
  if(DET_PYTHON3)
    execute_process(COMMAND ${DET_PYTHON3} -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])"
                    OUTPUT_VARIABLE NCCL_WHEEL_DIR OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${NCCL_WHEEL_DIR}/include)
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${CUDAToolkit_LIBRARY_DIR} ${NCCL_WHEEL_DIR}/lib)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    message(STATUS "NCCL: ${NCCL_LIBRARY}")
  else()
    message(STATUS "NCCL not found: building without libdet_nccl")
    unset(NCCL_LIBRARY)
    unset(NCCL_LIBRARY CACHE)
  endif()
endif()
