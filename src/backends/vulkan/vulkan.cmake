# vulkan.cmake — the Vulkan backend's build (included by the top-level CMakeLists.txt when
# Vulkan and glslc are found): shaders/*.comp -> SPIR-V (glslc, Vulkan 1.2) -> a C table
# (tools/embed.cmake via dbk_embed) -> dbk_core, plus the backend sources and Vulkan::Vulkan.
# Every shader depends on all of shaders/common/*.glsl (a handful of small includes, so a
# coarse dependency is simpler than depfiles and rebuilds in seconds).
file(GLOB DBK_VK_SHADER_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/shaders/*.comp)
file(GLOB DBK_VK_SHADER_INCLUDES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/shaders/common/*.glsl)
set(DBK_VK_SPV "")
foreach(src IN LISTS DBK_VK_SHADER_SOURCES)
  get_filename_component(base ${src} NAME_WE)
  set(spv ${CMAKE_BINARY_DIR}/gen/shaders/${base}.spv)
  add_custom_command(OUTPUT ${spv}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/gen/shaders
    COMMAND ${Vulkan_GLSLC_EXECUTABLE} --target-env=vulkan1.2 -O -Werror
            -I ${PROJECT_SOURCE_DIR}/shaders ${src} -o ${spv}
    DEPENDS ${src} ${DBK_VK_SHADER_INCLUDES}
    COMMENT "glslc ${base}.comp" VERBATIM)
  list(APPEND DBK_VK_SPV ${spv})
endforeach()
dbk_embed(vk_shaders ${CMAKE_BINARY_DIR}/gen/vk_shaders.c ${DBK_VK_SPV})

target_sources(dbk_core PRIVATE ${DBK_VULKAN_SOURCES} ${CMAKE_BINARY_DIR}/gen/vk_shaders.c)
target_link_libraries(dbk_core PUBLIC Vulkan::Vulkan)
