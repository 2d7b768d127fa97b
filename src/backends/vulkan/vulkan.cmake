# vulkan.cmake — the Vulkan backend's build (included by the top-level CMakeLists.txt when
# Vulkan and glslc are found): shaders/*.comp -> SPIR-V (glslc, Vulkan 1.2) -> a C table
# (tools/embed.cmake via dbk_embed) -> dbk_core, plus the backend sources and Vulkan::Vulkan.
# Every shader depends on all of shaders/common/*.glsl (a handful of small includes, so a
# coarse dependency is simpler than depfiles and rebuilds in seconds).
file(GLOB DBK_VK_SHADER_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/shaders/*.comp)
file(GLOB DBK_VK_SHADER_INCLUDES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/shaders/common/*.glsl)
# Variants are derived from the sources, not listed: a shader whose text mentions DBK_F16
# (shaders/common/operand.glsl) is compiled a second time with -DDBK_F16 as <name>_f16.
set(DBK_VK_SPV "")
function(dbk_vk_shader src name)
  set(spv ${CMAKE_BINARY_DIR}/gen/shaders/${name}.spv)
  add_custom_command(OUTPUT ${spv}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/gen/shaders
    COMMAND ${Vulkan_GLSLC_EXECUTABLE} --target-env=vulkan1.2 -O -Werror ${ARGN}
            -I ${PROJECT_SOURCE_DIR}/shaders ${src} -o ${spv}
    DEPENDS ${src} ${DBK_VK_SHADER_INCLUDES}
    COMMENT "glslc ${name}" VERBATIM)
  set(DBK_VK_SPV ${DBK_VK_SPV} ${spv} PARENT_SCOPE)
endfunction()
foreach(src IN LISTS DBK_VK_SHADER_SOURCES)
  get_filename_component(base ${src} NAME_WE)
  dbk_vk_shader(${src} ${base})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})   # re-derive on edits
  file(STRINGS ${src} f16_mention REGEX "DBK_F16")
  if(f16_mention)
    dbk_vk_shader(${src} ${base}_f16 -DDBK_F16=1)
  endif()
endforeach()
dbk_embed(vk_shaders ${CMAKE_BINARY_DIR}/gen/vk_shaders.c ${DBK_VK_SPV})

target_sources(dbk_core PRIVATE ${DBK_VULKAN_SOURCES} ${CMAKE_BINARY_DIR}/gen/vk_shaders.c)
target_link_libraries(dbk_core PUBLIC Vulkan::Vulkan)
