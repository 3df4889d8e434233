# What `cmake --install` puts under a prefix, and the Debian package `cpack -G DEB` makes of
# the same files (docs/install.md):
#   bin/ray-gitops                          the binary
#   bin/ray-gitops-review                   -> ../share/ray-gitops/hooks/ci/ray-gitops-review
#   lib/systemd/system/ray-gitops.service   the unit of examples/systemd, enabled by nobody
#   share/ray-gitops/schema/                the JSON Schemas, for editors and CI
#   share/ray-gitops/hooks/                 the pre-commit hook and the CI recipes
#   share/doc/ray-gitops/                   README.md, docs/ and the example repository
# The package's Depends come from the binary's shared libraries (dpkg-shlibdeps), plus tzdata,
# which schedules read at run time and no library names.
include(GNUInstallDirs)

set(RG_DATADIR ${CMAKE_INSTALL_DATADIR}/ray-gitops)

install(TARGETS ray-gitops RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The unit of examples/systemd starts /usr/bin/ray-gitops, where the package puts it; installed
# under another prefix, it starts that prefix's binary. The prefix is known only when
# installing (cpack installs under /usr whatever the build was configured with), so the unit is
# written straight to where it goes: two installs at once (cpack and `cmake --install`) never
# share a file. Under lib/systemd/system, where systemd looks for the units of packages
# (/usr/lib/systemd/system on Debian 12).
set(rg_unit_src ${PROJECT_SOURCE_DIR}/examples/systemd/ray-gitops.service)
install(CODE "
  file(READ \"${rg_unit_src}\" unit)
  string(REPLACE \"/usr/bin/ray-gitops \" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/ray-gitops \"
         unit \"\${unit}\")
  set(dest \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/ray-gitops.service\")
  message(STATUS \"Installing: \${dest}\")
  file(WRITE \"\${dest}\" \"\${unit}\")
  file(CHMOD \"\${dest}\" FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${dest}\")
")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/schema/ DESTINATION ${RG_DATADIR}/schema
        FILES_MATCHING PATTERN "*.json")
install(PROGRAMS ${PROJECT_SOURCE_DIR}/hooks/pre-commit DESTINATION ${RG_DATADIR}/hooks)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/hooks/ci/ray-gitops-review DESTINATION ${RG_DATADIR}/hooks/ci)
install(FILES ${PROJECT_SOURCE_DIR}/hooks/ci/github-actions.yml
              ${PROJECT_SOURCE_DIR}/hooks/ci/gitlab-ci.yml
        DESTINATION ${RG_DATADIR}/hooks/ci)
# The review script on PATH, as the CI recipes call it.
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/install)
file(CREATE_LINK ../share/ray-gitops/hooks/ci/ray-gitops-review
     ${PROJECT_BINARY_DIR}/install/ray-gitops-review SYMBOLIC)
install(FILES ${PROJECT_BINARY_DIR}/install/ray-gitops-review DESTINATION ${CMAKE_INSTALL_BINDIR})

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        PATTERN "forks/verl/verl" EXCLUDE)

set(CPACK_PACKAGE_NAME ray-gitops)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ray-gitops")
set(CPACK_PACKAGE_CONTACT "ray-gitops maintainers <ray-gitops@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "declarative GitOps reconciler for Ray jobs")
set(CPACK_PACKAGE_DESCRIPTION
    "ray-gitops reads a cluster file and a folder of JobSpec YAML files from a Git repository,\n\
compares them with the jobs that exist on a Ray cluster through the Ray Jobs API, submits\n\
what is missing, stops what was removed or replaced, and commits the status of every run\n\
back to Git. Submission ids are derived from the spec, so nothing ever runs twice.")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://github.com/ray-gitops/ray-gitops")
set(CPACK_PACKAGE_INSTALL_DIRECTORY ray-gitops)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "tzdata")
# HTTPS remotes and Ray heads are verified against the system's CA store; the review script of
# the CI recipes is Python.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ca-certificates, python3")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
