// Lua 5.1 from Debian (liblua5.1-0-dev), with Debian's cjson (lua-cjson-dev)
// and bit (lua-bitop-dev) libraries linked in. Seen only by CLuaScripting.
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
