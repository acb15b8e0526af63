# vdev_rtnl: rtnetlink device management (veth pairs into network namespaces,
# persistent taps, the link monitor), on libnl-route-3. Included from
# netlink/CMakeLists.txt; every path is relative to this file so the fragment
# does not care which directory includes it.

pkg_check_modules(VDEV_RTNL_LIBNL REQUIRED IMPORTED_TARGET libnl-3.0 libnl-route-3.0)

add_library(vdev_rtnl STATIC
  ${CMAKE_CURRENT_LIST_DIR}/src/rtnl_link.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/rtnl_monitor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/rtnl_socket.cpp)
target_include_directories(vdev_rtnl
  PUBLIC
    ${CMAKE_CURRENT_LIST_DIR}/include
    ${PROJECT_SOURCE_DIR}/vdev/include   # vdev/result.h, vdev/fd.h (header-only)
  PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/src)
# libnl stays out of the public headers, so users need neither its include
# path nor its types; the static library still brings its link flags.
target_link_libraries(vdev_rtnl PRIVATE PkgConfig::VDEV_RTNL_LIBNL PUBLIC Threads::Threads)
