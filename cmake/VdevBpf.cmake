# VdevBpf: the one rule that builds BPF C into a libbpf skeleton header, for
# the datapath's programs and vdev-bench's.
#
#   include(${PROJECT_SOURCE_DIR}/cmake/VdevBpf.cmake)
#   vdev_bpf_skeleton(NAME SOURCE
#                     [SKELETON_NAME ident]   # bpftool's "name": the skeleton's struct and
#                                             # function prefix (default NAME)
#                     [OUTPUT_DIR dir]        # NAME.bpf.o and NAME.skel.h (default
#                                             # ${CMAKE_CURRENT_BINARY_DIR}/gen)
#                     [INCLUDE_DIRS dir...]   # besides SOURCE's own directory
#                     [DEPENDS file...])      # headers SOURCE includes
#
# compiles SOURCE with clang -O2 -g -target bpf, generates NAME.skel.h with
# `bpftool gen skeleton`, and sets NAME_SKEL to the header's path in the
# caller's scope (for add_custom_target(... DEPENDS ${NAME_SKEL})).
#
# Two things -target bpf does not do by itself: search the multiarch include
# directory, where Debian keeps asm/ (linux/bpf.h includes asm/types.h), and
# define __TARGET_ARCH_<arch>, which bpf_tracing.h's BPF_PROG() and
# PT_REGS_* need.
include_guard(GLOBAL)

find_program(VDEV_BPF_CLANG NAMES clang clang-16 clang-15 clang-14 REQUIRED)
find_program(VDEV_BPF_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin /usr/local/sbin REQUIRED)

# The flags, computed once per configure; INTERNAL cache entries are seen by
# every directory (include_guard skips this file for the second includer).
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(_multiarch ${CMAKE_LIBRARY_ARCHITECTURE})
else()
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch
                  OUTPUT_VARIABLE _multiarch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
set(_flags -O2 -g -Wall -target bpf)
if(_multiarch)
  list(APPEND _flags -I/usr/include/${_multiarch})
endif()
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|amd64|AMD64")
  list(APPEND _flags -D__TARGET_ARCH_x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  list(APPEND _flags -D__TARGET_ARCH_arm64)
else()
  list(APPEND _flags -D__TARGET_ARCH_${CMAKE_SYSTEM_PROCESSOR})
endif()
set(VDEV_BPF_FLAGS "${_flags}" CACHE INTERNAL "clang flags for BPF C (cmake/VdevBpf.cmake)")
unset(_flags)
unset(_multiarch)

function(vdev_bpf_skeleton name src)
  cmake_parse_arguments(ARG "" "SKELETON_NAME;OUTPUT_DIR" "INCLUDE_DIRS;DEPENDS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "vdev_bpf_skeleton(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SKELETON_NAME)
    set(ARG_SKELETON_NAME ${name})
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/gen)
  endif()
  get_filename_component(src_dir ${src} DIRECTORY)
  set(includes -I${src_dir})
  foreach(dir ${ARG_INCLUDE_DIRS})
    list(APPEND includes -I${dir})
  endforeach()

  set(obj ${ARG_OUTPUT_DIR}/${name}.bpf.o)
  set(skel ${ARG_OUTPUT_DIR}/${name}.skel.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ARG_OUTPUT_DIR}
    COMMAND ${VDEV_BPF_CLANG} ${VDEV_BPF_FLAGS} ${includes} -c ${src} -o ${obj}
    DEPENDS ${src} ${ARG_DEPENDS}
    COMMENT "BPF ${name}.bpf.c"
    VERBATIM)
  # bpftool writes the header on stdout; through a shell so a failure leaves
  # no half-written header behind that would count as up to date.
  add_custom_command(
    OUTPUT ${skel}
    COMMAND sh -c "\"$0\" gen skeleton \"$1\" name \"$2\" > \"$3.tmp\" && mv \"$3.tmp\" \"$3\""
            ${VDEV_BPF_BPFTOOL} ${obj} ${ARG_SKELETON_NAME} ${skel}
    DEPENDS ${obj}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  set(${name}_SKEL ${skel} PARENT_SCOPE)
endfunction()
