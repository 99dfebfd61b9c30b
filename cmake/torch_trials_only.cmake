# DET_COMPONENTS=torch-trials: only what a GPU node builds against its own LibTorch
# (scripts/build-torch-trials.sh), next to the det-node, det-worker and det of a portable archive
# (scripts/package.sh): libdet_torch_trials.so, libdet_nccl.so where CUDA and NCCL are found, and
# det-trial-bench. LibTorch is the one requirement: zlib and nlohmann-json are used when found
# (the archive carries nlohmann's header in third_party/), CUDA when LibTorch is a CUDA build.

find_package(ZLIB)
find_package(nlohmann_json QUIET)
if(NOT nlohmann_json_FOUND)
  find_path(NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp HINTS ${CMAKE_SOURCE_DIR}/third_party)
  if(NOT NLOHMANN_JSON_INCLUDE_DIR)
    message(FATAL_ERROR "nlohmann/json.hpp was found neither installed nor in ${CMAKE_SOURCE_DIR}/third_party: "
                        "unpack det's archive whole, or install nlohmann-json.")
  endif()
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${NLOHMANN_JSON_INCLUDE_DIR})
endif()

set(DET_CUDA_ENABLED OFF)
if(DET_TORCH_CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(DET_CUDA_ENABLED ON)
endif()
include(cmake/det_nccl.cmake)

add_library(det_uuid STATIC auth/random_uuid.cpp)
add_subdirectory(gpu)
add_executable(det-trial-bench bench/trial_bench.cpp)
target_link_libraries(det-trial-bench PRIVATE det_harness_core nlohmann_json::nlohmann_json)
set_target_properties(det-trial-bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
message(STATUS "det torch trials: LibTorch ${Torch_VERSION}, CUDA ${DET_CUDA_ENABLED}, NCCL ${NCCL_LIBRARY}, zlib ${ZLIB_FOUND}")

install(TARGETS det_torch_trials LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/det)
install(TARGETS det-trial-bench RUNTIME DESTINATION ${CMAKE_INSTALL_LIBDIR}/det)
if(TARGET det_nccl)
  install(TARGETS det_nccl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/det)
endif()
