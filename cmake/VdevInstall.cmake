# VdevInstall: what `cmake --install` puts on a host besides the three
# binaries (their rules sit next to their targets): the systemd unit and its
# defaults file, the man pages, bash completion for vdevctl, the
# documentation and an example CNI network configuration.
#
# Every destination is relative to the install prefix, so
# `cmake --install build --prefix DIR` moves all of it, except where
# GNUInstallDirs puts things outside it for the prefix /usr: the
# configuration goes to /etc (not /usr/etc), and the unit to systemd's own
# unit directory (/lib/systemd/system on Debian 12). That choice is made for
# the prefix of the install, not of the configuration, so a build configured
# for /usr/local installs with `--prefix /usr` as one configured for /usr
# (debian/rules packages a build tree that way for tests/e2e).
#
# Options (cache variables):
#   VDEV_CNI_BIN_DIR       where vdev-cni goes (tools/vdev-cni/CMakeLists.txt)
#   VDEV_SYSTEMD_UNIT_DIR  the unit's directory; empty: as described above
#   VDEV_SOCKET_GROUP      the group /etc/default/vdevd gives the control
#                          socket (vdevd --group); empty: root only. The
#                          group must exist before vdevd starts (the Debian
#                          package creates "vdev"). The environment
#                          variable of the same name, at install time,
#                          overrides it.
#
# Components: "vdev" (all of the above and the three binaries, the default
# install) and "vdev-extra" (vdev-vm and vdev-bench, installed only when asked
# for: `cmake --install build --component vdev-extra`).

if(VDEV_INSTALL_TIME)
  # Run by cmake_install.cmake: CMAKE_INSTALL_PREFIX is the install's.
  function(_vdev_full var dir)
    if(IS_ABSOLUTE "${dir}")
      set(${var} "${dir}" PARENT_SCOPE)
    else()
      set(${var} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
    endif()
  endfunction()
  _vdev_full(_sbin "${VDEV_I_SBIN}")
  _vdev_full(_doc "${VDEV_I_DOC}")
  if(NOT IS_ABSOLUTE "${VDEV_I_ETC}" AND CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(_etc "/etc")
  else()
    _vdev_full(_etc "${VDEV_I_ETC}")
  endif()
  if(VDEV_I_UNIT)
    _vdev_full(_unit_dir "${VDEV_I_UNIT}")
  elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(_unit_dir "${VDEV_I_UNIT_USR}")
  else()
    _vdev_full(_unit_dir "lib/systemd/system")
  endif()
  if(DEFINED ENV{VDEV_SOCKET_GROUP})
    set(VDEV_I_GROUP "$ENV{VDEV_SOCKET_GROUP}")
  endif()

  # Writes contrib/systemd/NAME with each FROM replaced by its TO to
  # VDEV_I_GEN/OUT; a FROM not in the file is an error (the file changed).
  function(_vdev_configure name out)
    file(READ "${VDEV_I_SRC}/contrib/systemd/${name}" _text)
    while(ARGN)
      list(POP_FRONT ARGN _from _to)
      string(FIND "${_text}" "${_from}" _at)
      if(_at LESS 0)
        message(FATAL_ERROR "contrib/systemd/${name} has no '${_from}' to configure")
      endif()
      string(REPLACE "${_from}" "${_to}" _text "${_text}")
    endwhile()
    file(WRITE "${VDEV_I_GEN}/${out}" "${_text}")
  endfunction()
  _vdev_configure(vdevd.service vdevd.service
    "ExecStart=/usr/sbin/vdevd " "ExecStart=${_sbin}/vdevd "
    "EnvironmentFile=-/etc/default/vdevd" "EnvironmentFile=-${_etc}/default/vdevd"
    "file:/usr/share/doc/vdev/" "file:${_doc}/")
  if(VDEV_I_GROUP STREQUAL "")
    _vdev_configure(vdevd.default vdevd)
  else()
    _vdev_configure(vdevd.default vdevd
      "\nVDEVD_ARGS=\"\"\n" "\nVDEVD_ARGS=\"--group ${VDEV_I_GROUP}\"\n")
  endif()

  # file(INSTALL) adds DESTDIR and records the files in install_manifest.txt.
  file(INSTALL DESTINATION "${_unit_dir}" TYPE FILE FILES "${VDEV_I_GEN}/vdevd.service")
  # Local options survive a reinstall, as a conffile does.
  if(EXISTS "$ENV{DESTDIR}${_etc}/default/vdevd")
    message(STATUS "Keeping: $ENV{DESTDIR}${_etc}/default/vdevd (the new one: ${VDEV_I_GEN}/vdevd)")
  else()
    file(INSTALL DESTINATION "${_etc}/default" TYPE FILE FILES "${VDEV_I_GEN}/vdevd")
  endif()
  return()
endif()

include_guard(GLOBAL)
include(GNUInstallDirs)

set(VDEV_SYSTEMD_UNIT_DIR "" CACHE STRING
    "systemd unit directory (empty: systemd's own for the prefix /usr, else lib/systemd/system under the prefix)")
set(VDEV_SOCKET_GROUP "" CACHE STRING
    "group that may use vdevd's control socket, written into /etc/default/vdevd (empty: root only)")

# systemd's unit directory, for an install to /usr ("/usr/lib/systemd/system"
# where pkg-config does not know systemd).
pkg_get_variable(_vdev_unit_dir_usr systemd systemdsystemunitdir)
if(NOT _vdev_unit_dir_usr)
  set(_vdev_unit_dir_usr "/usr/lib/systemd/system")
endif()

set(_vdev_src "${PROJECT_SOURCE_DIR}")

# The unit and the defaults file carry absolute paths (ExecStart=,
# EnvironmentFile=, Documentation=) that depend on the prefix, and
# `cmake --install --prefix` changes the prefix after configuration: so they
# are written at install time, by the end of this file run from the install
# script, from contrib/systemd/ as it is in the tree (which names the Debian
# paths: /usr/sbin/vdevd, /etc/default/vdevd, /usr/share/doc/vdev).
install(CODE "
  set(VDEV_INSTALL_TIME ON)
  set(VDEV_I_SRC \"${PROJECT_SOURCE_DIR}\")
  set(VDEV_I_GEN \"${PROJECT_BINARY_DIR}/install-gen\")
  set(VDEV_I_SBIN \"${CMAKE_INSTALL_SBINDIR}\")
  set(VDEV_I_ETC \"${CMAKE_INSTALL_SYSCONFDIR}\")
  set(VDEV_I_DOC \"${CMAKE_INSTALL_DOCDIR}\")
  set(VDEV_I_UNIT \"${VDEV_SYSTEMD_UNIT_DIR}\")
  set(VDEV_I_UNIT_USR \"${_vdev_unit_dir_usr}\")
  set(VDEV_I_GROUP \"${VDEV_SOCKET_GROUP}\")
  include(\"${CMAKE_CURRENT_LIST_FILE}\")
" COMPONENT vdev)

install(FILES docs/man/vdevd.8 docs/man/vdevctl.8 docs/man/vdev-cni.8
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man8 COMPONENT vdev)
install(FILES contrib/bash-completion/vdevctl
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT vdev)

file(GLOB _vdev_docs CONFIGURE_DEPENDS ${_vdev_src}/docs/*.md)
install(FILES README.md ${_vdev_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT vdev)
install(FILES contrib/cni/10-vdev.conflist
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT vdev)
