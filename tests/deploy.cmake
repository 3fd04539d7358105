# The .deb (issue 16 item 6; tests/cluster/package_deb.sh), label deploy:
# plain build only (.ci/run's sanitized phase runs unit, fuzz, cluster and
# lint), as a sanitized .deb would need the sanitizers' runtimes.
#   deploy.deb_contents  cpack -G DEB, then its dependencies, files,
#                        control scripts, units (systemd-analyze verify)
#                        and daemons, extracted into a temporary root
#   deploy.deb_install   dpkg -i for real, then purge: only with
#                        BRIM_DEB_INSTALL=1 (.ci/run), else skipped (77)
if(TARGET brim-node AND TARGET brim-coord AND TARGET brimctl)
  foreach(mode contents install)
    add_test(NAME deploy.deb_${mode}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/package_deb.sh
              ${mode} ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR})
    set_tests_properties(deploy.deb_${mode} PROPERTIES LABELS deploy
      TIMEOUT 120 SKIP_RETURN_CODE 77 RESOURCE_LOCK brim_deb)
  endforeach()
endif()
