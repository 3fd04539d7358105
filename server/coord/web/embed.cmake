# server/coord/web/embed.cmake - turn one file of the web view into C:
#   cmake -DIN=FILE -DOUT=FILE.c -DNAME=SYMBOL -P embed.cmake
# writes `const unsigned char SYMBOL[]` (the bytes, NUL-terminated) and
# `const size_t SYMBOL_len` (without the NUL), so brim-coord serves the
# page from its own binary (DESIGN.md 11: nothing fetched from elsewhere).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" nhex)
math(EXPR len "${nhex} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}"
  "/* Generated from ${IN} by server/coord/web/embed.cmake: do not edit. */\n"
  "#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
  "const size_t ${NAME}_len = ${len};\n")
