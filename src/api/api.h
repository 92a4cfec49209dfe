/* api.h - the API room's door: decoded requests in, encoded responses out.
 *
 * kc_api_on_request is the network layer's request callback. It decodes the frame, finds the
 * handler for the API, lets it fill the response struct, and encodes the response frame with
 * the right header version. The handler table below is the one list of served APIs: an API is
 * served, and advertised in ApiVersions, exactly when it has a handler; its versions are the
 * ones proto/ defines (the generated kc_api_table).
 */
#ifndef KC_API_API_H
#define KC_API_API_H

#include <stdint.h>

#include "api/request.h"
#include "coord/coord.h"
#include "net/net.h"

/* Kafka error codes used by the handlers. */
enum {
    KC_ERR_NONE = 0,
    KC_ERR_UNKNOWN_TOPIC_OR_PARTITION = 3,
    KC_ERR_COORDINATOR_NOT_AVAILABLE = 15,
    KC_ERR_INVALID_TOPIC_EXCEPTION = 17,
    KC_ERR_UNSUPPORTED_VERSION = 35,
    KC_ERR_INVALID_REQUEST = 42,
    KC_ERR_UNKNOWN_TOPIC_ID = 100,
    KC_ERR_MISMATCHED_ENDPOINT_TYPE = 114,
    KC_ERR_UNSUPPORTED_ENDPOINT_TYPE = 115,
};

/* What the handlers know about this broker. Owned by main; must outlive the server. */
typedef struct kc_api_ctx_s {
    int32_t node_id;
    const char *host; /* advertised host */
    int32_t port;     /* advertised port */
    const kc_catalog_t *catalog;
} kc_api_ctx_t;

/* A handler fills `resp` (already initialised to the response's defaults) for `req`. Memory
 * for arrays and strings comes from `a`, which lives until the response is written. Returns 0,
 * or -1 to close the connection instead of answering. */
typedef int (*kc_api_handler_fn)(kc_api_ctx_t *ctx, const kc_request_t *req, kc_arena_t *a,
                                 void *resp);

/* The kc_request_cb for kc_server_opts_t; `app` is a kc_api_ctx_t. */
void kc_api_on_request(void *app, kc_conn_t *conn, kc_slot_t *slot, const uint8_t *frame,
                       size_t len);

/* Non-zero when `key` has a handler and `version` is within its range. */
int kc_api_served(int16_t key, int16_t version);

/* Fill an ApiVersions answer's key list with every served API (from `a`). */
void kc_api_fill_versions(kc_api_versions_response_t *resp, kc_arena_t *a);

/* Discovery handlers (discovery.c). */
int kc_api_api_versions(kc_api_ctx_t *ctx, const kc_request_t *req, kc_arena_t *a, void *resp);
int kc_api_metadata(kc_api_ctx_t *ctx, const kc_request_t *req, kc_arena_t *a, void *resp);
int kc_api_find_coordinator(kc_api_ctx_t *ctx, const kc_request_t *req, kc_arena_t *a, void *resp);
int kc_api_describe_cluster(kc_api_ctx_t *ctx, const kc_request_t *req, kc_arena_t *a, void *resp);

#endif
