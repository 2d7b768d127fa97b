# opencl.cmake — the OpenCL backend's build, included by the top-level CMakeLists.txt when
# OpenCL and CLBlast are found: its sources, the embedded cl/*.cl table (tools/embed.cmake)
# and its libraries, all added to dbk_core.
file(GLOB DBK_OCL_KERNEL_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/cl/*.cl)
dbk_embed(ocl_kernels ${CMAKE_BINARY_DIR}/gen/ocl_kernels.c ${DBK_OCL_KERNEL_FILES})
target_sources(dbk_core PRIVATE ${DBK_OPENCL_SOURCES} ${CMAKE_BINARY_DIR}/gen/ocl_kernels.c)
target_compile_definitions(dbk_core PRIVATE CL_TARGET_OPENCL_VERSION=120)
if(TARGET clblast)
  target_link_libraries(dbk_core PUBLIC OpenCL::OpenCL clblast)
else()
  target_link_libraries(dbk_core PUBLIC OpenCL::OpenCL ${CLBLAST_LIBRARIES})
endif()
