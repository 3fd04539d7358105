# deploy/install.cmake - run by `cmake --install` (and cpack): configures
# the systemd units and the config files for the install prefix and
# installs them. The GNU rule for /etc and /var: under the prefix /usr
# they are /etc and /var, under any other PREFIX PREFIX/etc, PREFIX/var.
# Set by deploy/CMakeLists.txt: BRIM_DEPLOY_SRC, BRIM_DEPLOY_TMP,
# BRIM_INSTALL_BINDIR, BRIM_INSTALL_DATADIR.
set(_prefix "${CMAKE_INSTALL_PREFIX}")
if(_prefix STREQUAL "/usr")
  set(_etc /etc)
  set(_var /var)
else()
  set(_etc "${_prefix}/etc")
  set(_var "${_prefix}/var")
endif()
set(BRIM_BINDIR "${_prefix}/${BRIM_INSTALL_BINDIR}")
set(BRIM_ETCDIR "${_etc}/brim")
set(BRIM_STATEDIR "${_var}/lib/brim")

# One scratch directory per prefix: two installs of one build may run at
# once (a test's temporary prefix, cpack's /usr).
string(MD5 _tag "${_prefix}")
set(_tmp "${BRIM_DEPLOY_TMP}/${_tag}")
foreach(_f systemd/brim-coord.service systemd/brim-node@.service
           config/coord.conf config/node.conf)
  get_filename_component(_name "${_f}" NAME)
  configure_file("${BRIM_DEPLOY_SRC}/${_f}.in" "${_tmp}/${_name}" @ONLY)
endforeach()

file(INSTALL DESTINATION "${_prefix}/lib/systemd/system" TYPE FILE
  FILES "${_tmp}/brim-coord.service" "${_tmp}/brim-node@.service")
# The coordinator's live config (a conffile of the .deb), and an example of
# each daemon's: a node's config is one per node name, node-NAME.conf.
file(INSTALL DESTINATION "${BRIM_ETCDIR}" TYPE FILE
  FILES "${_tmp}/coord.conf")
file(INSTALL DESTINATION "${_prefix}/${BRIM_INSTALL_DATADIR}/brim/examples"
  TYPE FILE FILES "${_tmp}/coord.conf" "${_tmp}/node.conf")
