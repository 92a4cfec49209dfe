/* request.h - one decoded Kafka request: its header, its API and version, and its body.
 *
 * kc_request_parse takes the bytes of one frame (everything after the 4-byte size) and
 * decodes the request header and then the body with the generated codec of the API and
 * version the header names. The body's strings are views into `frame` and its arrays live in
 * the arena, so the request is valid while both are.
 */
#ifndef KC_API_REQUEST_H
#define KC_API_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "proto/gen_api.h"
#include "util/arena.h"

/* Results of kc_request_parse. */
typedef enum {
    KC_REQ_OK = 0,
    KC_REQ_MALFORMED = -1,   /* header or body does not decode: close the connection */
    KC_REQ_UNSUPPORTED = -2, /* unknown API key, or a version outside the served range */
    KC_REQ_TOO_LARGE = -3,   /* the decoded form would pass the arena's limit: close */
} kc_req_status_t;

typedef struct kc_request_s {
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
    kc_str_t client_id;       /* null when the client sent none */
    const kc_api_info_t *api; /* NULL when the key is unknown */
    int flexible;             /* request header v2 / response header v1 */
    void *body;               /* the decoded request struct, in the arena; NULL unless OK */
    size_t body_offset;       /* where the body starts within the frame */
} kc_request_t;

/* Decode one frame. `served` decides which API keys and versions are accepted: it returns
 * non-zero when (key, version) is served. The first 8 bytes (key, version, correlation id)
 * are filled in whenever the frame has them, even when the result is not KC_REQ_OK, so that
 * an UNSUPPORTED_VERSION answer can echo the correlation id.
 * When the arena has a limit, the decoder's arrays are allocated against it, and a request
 * whose decoded form would pass it fails with KC_REQ_TOO_LARGE before the array that would
 * pass it is allocated.
 * Returns KC_REQ_OK, KC_REQ_MALFORMED, KC_REQ_UNSUPPORTED or KC_REQ_TOO_LARGE. */
kc_req_status_t kc_request_parse(const uint8_t *frame, size_t len, kc_arena_t *a,
                                 int (*served)(int16_t key, int16_t version), kc_request_t *req);

#endif
