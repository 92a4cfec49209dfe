/* errors.h - the Kafka error codes the group room answers with.
 *
 * The values are Kafka's (clients/src/main/java/org/apache/kafka/common/protocol/Errors.java)
 * and must never change: they go on the wire. The prefix is KC_GERR_ so that this header can
 * be included next to api/api.h, whose KC_ERR_ enum holds the codes of the discovery APIs;
 * the two lists may be merged into one shared header later.
 */
#ifndef KC_GROUP_ERRORS_H
#define KC_GROUP_ERRORS_H

enum {
    KC_GERR_UNKNOWN_SERVER_ERROR = -1,
    KC_GERR_NONE = 0,
    KC_GERR_UNKNOWN_TOPIC_OR_PARTITION = 3,
    KC_GERR_COORDINATOR_LOAD_IN_PROGRESS = 14,
    KC_GERR_COORDINATOR_NOT_AVAILABLE = 15,
    KC_GERR_NOT_COORDINATOR = 16,
    KC_GERR_ILLEGAL_GENERATION = 22,
    KC_GERR_INCONSISTENT_GROUP_PROTOCOL = 23,
    KC_GERR_INVALID_GROUP_ID = 24,
    KC_GERR_UNKNOWN_MEMBER_ID = 25,
    KC_GERR_INVALID_SESSION_TIMEOUT = 26,
    KC_GERR_REBALANCE_IN_PROGRESS = 27,
    KC_GERR_GROUP_AUTHORIZATION_FAILED = 30,
    KC_GERR_UNSUPPORTED_VERSION = 35,
    KC_GERR_NON_EMPTY_GROUP = 68,
    KC_GERR_GROUP_ID_NOT_FOUND = 69,
    KC_GERR_MEMBER_ID_REQUIRED = 79,
    KC_GERR_GROUP_MAX_SIZE_REACHED = 81,
    KC_GERR_FENCED_INSTANCE_ID = 82,
    KC_GERR_GROUP_SUBSCRIBED_TO_TOPIC = 86,
    KC_GERR_UNSTABLE_OFFSET_COMMIT = 88,
    KC_GERR_STALE_MEMBER_EPOCH = 113,
};

/* Kafka's ACL operation codes (AclOperation.java), as bits of DescribeGroups'
 * authorized_operations: a classic group supports READ, DELETE and DESCRIBE. */
#define KC_GROUP_ACL_READ     3
#define KC_GROUP_ACL_DELETE   6
#define KC_GROUP_ACL_DESCRIBE 8
#define KC_GROUP_AUTHORIZED_OPERATIONS                                                             \
    ((1 << KC_GROUP_ACL_READ) | (1 << KC_GROUP_ACL_DELETE) | (1 << KC_GROUP_ACL_DESCRIBE))

#endif
