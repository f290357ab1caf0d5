# Warning flags, sanitizers and the per-layer library helper shared by every folder.
set(AMK_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
    -Wcast-align -Wimplicit-fallthrough -Wmissing-declarations)
# GCC 12 reports impossible -Wrestrict overlaps inside std::string concatenation (GCC PR 105329).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND AMK_WARNINGS -Wno-restrict)
endif()
if(AMK_WERROR)
  list(APPEND AMK_WARNINGS -Werror)
endif()

set(AMK_SANITIZE_FLAGS "")
if(AMK_SANITIZE)
  set(AMK_SANITIZE_FLAGS -fsanitize=${AMK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
endif()

# amk_apply_flags(target): warnings, sanitizers and the repository root as include path.
function(amk_apply_flags tgt)
  target_compile_options(${tgt} PRIVATE ${AMK_WARNINGS} ${AMK_SANITIZE_FLAGS})
  target_link_options(${tgt} PRIVATE ${AMK_SANITIZE_FLAGS})
  target_include_directories(${tgt} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()

# amk_layer(name SOURCES ... PUBLIC_DEPS ... PRIVATE_DEPS ...): one static library per folder.
function(amk_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(amk_${name} STATIC ${L_SOURCES})
  amk_apply_flags(amk_${name})
  target_link_libraries(amk_${name} PUBLIC ${L_PUBLIC_DEPS} PRIVATE ${L_PRIVATE_DEPS})
endfunction()
