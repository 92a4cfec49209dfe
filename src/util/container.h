/* container.h - container_of: the struct that embeds a member, from a pointer to the member.
 *
 * Used where libuv hands back a pointer to a handle or request embedded in the struct that
 * owns it (STYLE.md: embed the uv_write_t, recover the owner with container_of).
 */
#ifndef KC_UTIL_CONTAINER_H
#define KC_UTIL_CONTAINER_H

#include <stddef.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
