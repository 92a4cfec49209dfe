/* request.c - frame to decoded request: header by the API's flexible versions, then the body.
 *
 * The header version follows from the API and version in its first four bytes: v2 (tagged
 * fields) when that version of the API is flexible, else v1. The body is decoded by the
 * generated codec into the arena. Bytes after the body are ignored, as Kafka ignores them.
 */
#include "api/request.h"

#include <string.h>

#include "proto/gen_headers.h"

kc_req_status_t kc_request_parse(const uint8_t *frame, size_t len, kc_arena_t *a,
                                 int (*served)(int16_t key, int16_t version), kc_request_t *req)
{
    memset(req, 0, sizeof(*req));
    req->client_id = KC_STR_NULL;
    if (len < 8)
        return KC_REQ_MALFORMED;
    kc_reader_t r;
    kc_rd_init(&r, frame, len);
    req->api_key = kc_rd_i16(&r);
    req->api_version = kc_rd_i16(&r);
    req->correlation_id = kc_rd_i32(&r);
    req->api = kc_api_find(req->api_key);
    if (req->api == NULL || req->api_version < req->api->min_version ||
        req->api_version > req->api->max_version || !served(req->api_key, req->api_version))
        return KC_REQ_UNSUPPORTED;
    req->flexible = kc_api_is_flexible(req->api, req->api_version);

    kc_request_header_t h;
    kc_rd_init(&r, frame, len);
    if (kc_request_header_decode(&r, a, req->flexible ? 2 : 1, &h) != 0)
        return KC_REQ_MALFORMED;
    req->client_id = h.client_id;
    req->body_offset = (size_t)(r.p - frame);

    void *body = kc_arena_alloc(a, req->api->request.struct_size);
    if (body == NULL)
        return a->over_limit ? KC_REQ_TOO_LARGE : KC_REQ_MALFORMED;
    if (req->api->request.decode(&r, a, req->api_version, body) != 0)
        return r.err == KC_RD_NOMEM && a->over_limit ? KC_REQ_TOO_LARGE : KC_REQ_MALFORMED;
    req->body = body;
    return KC_REQ_OK;
}
