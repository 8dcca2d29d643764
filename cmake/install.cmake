# What `cmake --install` puts under the prefix, for host applications that embed vkformer
# (README.md, "Embedding"):
#   include/vkformer/vkformer.hpp, vkformer.h      the C++ and C entry headers (include/vkformer/)
#   include/vkformer/engine/..., model/...         every engine and model header, at the paths
#                                                  the headers include each other by
#   lib/libvkformer_engine.a, libvkformer_model.a  (.so with -DBUILD_SHARED_LIBS=ON); the
#                                                  shaders' SPIR-V is inside the engine library
#   lib/libvkformer_tune.a, libvkformer_reference.a  the tuner the model links privately
#   lib/cmake/vkformer/                            find_package(vkformer): vkformer::engine,
#                                                  vkformer::model
#   lib/pkgconfig/vkformer.pc                      pkg-config vkformer
#   bin/vkf                                        the command-line tool
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VKF_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/vkformer)
set(VKF_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/vkformer)

set_target_properties(vkf_engine PROPERTIES EXPORT_NAME engine OUTPUT_NAME vkformer_engine
                                            VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
set_target_properties(vkf_model PROPERTIES EXPORT_NAME model OUTPUT_NAME vkformer_model
                                           VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
# The tuner and the op references it checks candidates against: the model links them privately
# (model/tuning.h), so a static model needs them on the link line too.
set_target_properties(vkf_tune PROPERTIES EXPORT_NAME tune OUTPUT_NAME vkformer_tune)
set_target_properties(vkf_reference PROPERTIES EXPORT_NAME reference OUTPUT_NAME vkformer_reference)
# The same names inside this build, so that code written against the package builds here too.
add_library(vkformer::engine ALIAS vkf_engine)
add_library(vkformer::model ALIAS vkf_model)

# The installed vkf finds the shared libraries beside it.
if(BUILD_SHARED_LIBS)
  set_target_properties(vkf PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

install(TARGETS vkf_engine vkf_reference vkf_tune vkf_model EXPORT vkformerTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${VKF_INSTALL_INCLUDEDIR})
install(TARGETS vkf RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/engine ${PROJECT_SOURCE_DIR}/model
        DESTINATION ${VKF_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/include/vkformer/vkformer.hpp
              ${PROJECT_SOURCE_DIR}/include/vkformer/vkformer.h
        DESTINATION ${VKF_INSTALL_INCLUDEDIR})

install(EXPORT vkformerTargets NAMESPACE vkformer:: DESTINATION ${VKF_INSTALL_CMAKEDIR})
# A static engine brings its private dependencies (MPI where it was built with it) to the link.
get_target_property(VKF_ENGINE_MPI_LIBRARIES vkf_engine VKF_MPI_LIBRARIES)
if(VKF_ENGINE_MPI_LIBRARIES AND NOT BUILD_SHARED_LIBS)
  set(VKF_CONFIG_NEEDS_MPI ON)
  string(JOIN " " VKF_PC_MPI_LIBS ${VKF_ENGINE_MPI_LIBRARIES})
else()
  set(VKF_CONFIG_NEEDS_MPI OFF)
  set(VKF_PC_MPI_LIBS "")
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vkformerConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/vkformerConfig.cmake
                              INSTALL_DESTINATION ${VKF_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vkformerConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vkformerConfig.cmake
              ${PROJECT_BINARY_DIR}/vkformerConfigVersion.cmake
        DESTINATION ${VKF_INSTALL_CMAKEDIR})

# pkg-config: static libraries need their dependencies (and the C++ runtime, for C programs) on
# every link line; shared ones only privately.
if(BUILD_SHARED_LIBS)
  set(VKF_PC_REQUIRES "vulkan nlohmann_json")
  set(VKF_PC_REQUIRES_PRIVATE "sentencepiece")
  set(VKF_PC_LIBS_EXTRA "")
  set(VKF_PC_INTERNAL_LIBS "")
else()
  set(VKF_PC_REQUIRES "vulkan nlohmann_json sentencepiece")
  set(VKF_PC_REQUIRES_PRIVATE "")
  set(VKF_PC_LIBS_EXTRA "${VKF_PC_MPI_LIBS} -lstdc++ -lm")
  set(VKF_PC_INTERNAL_LIBS "-lvkformer_tune -lvkformer_reference")
endif()
# An absolute CMAKE_INSTALL_LIBDIR is used as it is; a relative one goes under ${prefix}, which
# pkg-config can relocate (--define-prefix).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(VKF_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(VKF_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(VKF_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(VKF_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(VKF_PREFIX "@VKF_PREFIX@")  # kept for the install step below
configure_file(${PROJECT_SOURCE_DIR}/cmake/vkformer.pc.in ${PROJECT_BINARY_DIR}/vkformer.pc.in
               @ONLY)
# The prefix is the one given to `cmake --install --prefix`, known only at install time.
install(CODE "
  file(READ \"${PROJECT_BINARY_DIR}/vkformer.pc.in\" pc)
  string(REPLACE \"@VKF_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" pc \"\${pc}\")
  file(WRITE \"${PROJECT_BINARY_DIR}/vkformer.pc\" \"\${pc}\")")
install(FILES ${PROJECT_BINARY_DIR}/vkformer.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
