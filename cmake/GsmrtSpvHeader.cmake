# GsmrtSpvHeader.cmake -- cmake -DSPV=in.spv -DHDR=out.h -DNAME=symbol -P GsmrtSpvHeader.cmake
# Writes the SPIR-V words of SPV as `const uint32_t NAME[]` (what
# glslangValidator --vn writes), so each kernel is compiled once: the .spv
# serves spirv-val and this header the registry.
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(n EQUAL 0 OR NOT rem EQUAL 0)
  message(FATAL_ERROR "${SPV}: not a whole number of 32-bit words")
endif()
# little-endian bytes b0 b1 b2 b3 -> 0xb3b2b1b0
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1, " words "${hex}")
file(WRITE ${HDR} "// generated from ${SPV}\nconst uint32_t ${NAME}[] = {${words}};\n")
